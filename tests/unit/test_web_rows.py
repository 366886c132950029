"""What the web app shows of a row: why it is worth a review, and which evidence URLs become links."""

from __future__ import annotations

import json

from firmsift.domain.batch_results import RowResult, shown_result
from firmsift.domain.batches import Batch, BatchRow
from firmsift.domain.clock import utc_now
from firmsift.domain.human_answers import HumanAnswer
from firmsift.domain.model import DomainResult, Evidence, KnownCompany, QuoteStatus, ResultStatus, Source
from firmsift.entrypoints.wiring.serving import web_address
from firmsift.entrypoints.web.rows import review_reasons, row_view

BATCH = Batch(id="b", classifier="cpg", created_at=utc_now(), columns=("Name", "Site"))


def view(known: dict[str, KnownCompany] | None = None, humans: dict[str, HumanAnswer] | None = None,
         **result: object):
    row = BatchRow(0, 2, json.dumps(["Acme", "shop.acme.com"]), "shop.acme.com", "job")
    done = DomainResult(domain="shop.acme.com", status=ResultStatus.DONE, source=Source.LLM, **result)  # type: ignore[arg-type]
    return row_view(BATCH, RowResult(row, "DONE", shown_result(done)), known or {}, humans or {})


def test_a_confident_verified_answer_needs_no_review() -> None:
    assert view(answer=True, confidence=4, quote_status=QuoteStatus.VERIFIED)["review"] == []


def test_each_doubt_is_named() -> None:
    assert view(answer=True, confidence=2)["review"] == ["low confidence (2)"]
    assert view(answer=True, confidence=5, quote_status=QuoteStatus.UNVERIFIED)["review"] == [
        "quote not found in the evidence"]
    listed = {"acme.com": KnownCompany("acme.com", "Acme")}
    assert view(listed, answer=False, confidence=5)["review"] == [
        "answered no, but acme.com is a listed known company"]
    assert view(listed, answer=True, confidence=5)["review"] == []
    assert view(answer=False, confidence=5, redirected_to="acme.net", redirected_answer=True)["review"] == [
        "redirects to acme.net, which was answered yes"]
    failed = {"classified_domain": "x.com", "status": "FAILED", "error": "LLM timed out", "confidence": None}
    assert review_reasons(failed, None) == ["failed: LLM timed out"]


def test_only_web_addresses_become_links_and_the_callers_cells_are_kept() -> None:
    shown = view(answer=True, confidence=4, evidence=(Evidence("https://acme.com/", "Acme"),
                                                      Evidence("javascript:alert(1)", ""),
                                                      Evidence("data:text/html,x", "d")))
    assert [(e["followable"], e["title"]) for e in shown["evidence"]] == [
        (True, "Acme"), (False, "javascript:alert(1)"), (False, "d")]
    assert shown["cells"] == [("Name", "Acme"), ("Site", "shop.acme.com")] and shown["answer_text"] == "yes"


def test_serve_names_the_address_a_browser_can_open() -> None:
    assert web_address("127.0.0.1", 8000) == "http://127.0.0.1:8000/"
    assert web_address("0.0.0.0", 80) == "http://127.0.0.1:80/"
    assert web_address("::1", 9000) == "http://[::1]:9000/"
    assert "announces" in web_address("127.0.0.1", 0)


def test_a_human_answer_of_the_domain_is_shown_as_the_rows_answer_and_the_batchs_own_kept() -> None:
    corrected = HumanAnswer("shop.acme.com", "cpg", False, "a bank", "key1", utc_now())
    shown = view(humans={"shop.acme.com": corrected}, answer=True, confidence=2)
    assert (shown["shown_answer"], shown["shown_source"], shown["shown_confidence"]) == ("no", "human", 5)
    assert (shown["answer_text"], shown["source"], shown["confidence"]) == ("yes", "llm", 2)
    assert shown["human"]["note"] == "a bank" and shown["human"]["answer_text"] == "no"
    plain = view(answer=True, confidence=2)
    assert (plain["shown_answer"], plain["shown_source"], plain["shown_confidence"], plain["human"]) == (
        "yes", "llm", 2, None)
