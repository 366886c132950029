"""Corrections in the web app on the real app and a SQLite file: a row corrected from the review
page (as a plain form and from our script) is stored as a human answer, shown as text, left out
of the review queue, listed, exported as `answers import` reads it, undone; every form wants its
CSRF token; bad input is shown next to the form with what was typed; another key's batch stays
not found; a later batch answers the domain from the correction."""

from __future__ import annotations

import csv
import html
import io
import json

import anyio
import pytest
from dependency_injector import providers
from starlette.testclient import TestClient

from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.domain.clock import utc_now
from firmsift.domain.human_answers import MAX_NOTE_CHARS
from firmsift.domain.model import Answer, DomainResult, ResultStatus, Source
from firmsift.services.process import process_job
from tests.support.web_sessions import issue, sign_in, submit_csv

YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "Makes and sells packaged snacks"}'
NOTE = "a bank <script>alert(1)</script>"


pytestmark = [pytest.mark.container(auth="required", rate_limit_per_minute=0, precheck=False),
              pytest.mark.client(base_url="https://testserver")]


@pytest.fixture
def container(container):  # noqa: ANN001, ANN201
    """The shared container, asking a scripted LLM and a static search at fixed prices."""
    container.llm.override(ScriptedLLM(YES))
    container.searches.override(providers.Object((StaticSearch(),)))
    container.pricing.override(FixedPricing(1.0, 2.0))
    return container


def doubtful_batch(container, client: TestClient, token: str) -> str:  # noqa: ANN001
    """A batch whose first row, acme.com, was answered yes with confidence 2: worth a review."""
    batch_id = submit_csv(client, token)
    row = anyio.run(lambda: container.batches().result_page(batch_id, after=-1, limit=1))[0].row
    answer = Answer(domain="acme.com", classifier="cpg", status=ResultStatus.DONE, answered_at=utc_now(),
                    source=Source.LLM, answer=True, confidence=2, reason="Maybe snacks")
    assert row.job_id is not None
    anyio.run(lambda: container.store().save_result(row.job_id, DomainResult.from_answer(answer, Source.LLM), answer))
    return batch_id


def correction(token: str, **fields: str) -> dict[str, str]:
    return {"csrf": token, "domain": "acme.com", "index": "0", "view": "review", "answer": "no", "note": NOTE,
            **fields}


def stored(container) -> list[tuple[str, bool, str]]:  # noqa: ANN001
    listed = anyio.run(lambda: container.human_answers().list_human_answers(None, after=None, limit=10))
    return [(h.domain, h.answer, h.note) for h in listed]


def test_a_row_corrected_from_the_review_page_is_shown_listed_exported_and_undone(client: TestClient,
                                                                                  container) -> None:  # noqa: ANN001
    issued = issue(container)
    token = sign_in(client, issued)
    batch_id = doubtful_batch(container, client, token)
    review = client.get(f"/batch/{batch_id}/review").text
    assert 'action="/batch/' + batch_id + '/correct"' in review and "low confidence (2)" in review

    sent = client.post(f"/batch/{batch_id}/correct", data=correction(token), follow_redirects=False)
    assert sent.status_code == 303 and sent.headers["location"] == f"/batch/{batch_id}/review#row-0"
    assert stored(container) == [("acme.com", False, NOTE)]
    back = client.get(sent.headers["location"]).text
    assert "Corrected acme.com (cpg) to no." in back  # the notice, once
    assert "1 doubtful rows are left out" in back and "Nothing to review" in back
    assert "Corrected acme.com" not in client.get(f"/batch/{batch_id}/review").text

    page = client.get(f"/batch/{batch_id}").text
    assert 'data-source="human"' in page and 'data-answer="no"' in page
    assert html.escape(NOTE, quote=False) in page and "<script>" not in page
    listed = client.get("/human-answers").text
    assert html.escape(NOTE, quote=False) in listed and "<script>" not in listed
    scripted = client.post(f"/batch/{batch_id}/correct", data=correction(token, answer="yes", note="sells soap"),
                           headers={"x-csrf-token": token})
    assert scripted.status_code == 200 and scripted.json()["message"] == "Corrected acme.com (cpg) to yes."
    assert 'id="row-0"' in scripted.json()["row_html"] and "sells soap" in scripted.json()["row_html"]

    listing = client.get("/human-answers").text
    assert "acme.com" in listing and "sells soap" in listing and 'action="/human-answers/undo"' in listing
    exported = client.get("/human-answers/export.csv")
    api = client.get("/answers?format=csv", headers={"x-api-key": issued.secret})
    assert exported.headers["content-disposition"] == 'attachment; filename="firmsift-human-answers.csv"'
    assert exported.text == api.text  # what `answers list --csv` writes and `answers import` reads
    assert [(r["domain"], r["answer"], r["note"]) for r in csv.DictReader(io.StringIO(exported.text))] == [
        ("acme.com", "true", "sells soap")]

    undone = client.post("/human-answers/undo", data={"csrf": token, "domain": "acme.com", "classifier": "cpg"})
    assert "Undid the correction of acme.com (cpg) to yes. Restored the earlier correction: no" in undone.text
    assert html.escape(NOTE, quote=False) in undone.text and "<script>" not in undone.text
    assert stored(container) == [("acme.com", False, NOTE)]
    undone = client.post("/human-answers/undo", data={"csrf": token, "domain": "acme.com", "classifier": "cpg"})
    assert "It has no human answer now" in undone.text and stored(container) == []
    nothing = client.post("/human-answers/undo", data={"csrf": token, "domain": "acme.com", "classifier": "cpg"})
    assert "Nothing undone: no human answer for acme.com (cpg) to undo." in nothing.text
    assert "low confidence (2)" in client.get(f"/batch/{batch_id}/review").text  # back in the queue


def test_the_correction_and_undo_forms_want_the_csrf_token(client: TestClient, container) -> None:  # noqa: ANN001
    token = sign_in(client, issue(container))
    batch_id = doubtful_batch(container, client, token)
    for csrf in ("", "forged"):
        assert client.post(f"/batch/{batch_id}/correct", data=correction(csrf)).status_code == 403
        assert client.post(f"/batch/{batch_id}/correct", data=correction(csrf),
                           headers={"x-csrf-token": csrf}).status_code == 403
    assert stored(container) == []
    client.post(f"/batch/{batch_id}/correct", data=correction(token))
    refused = client.post("/human-answers/undo", data={"csrf": "forged", "domain": "acme.com", "classifier": "cpg"})
    assert refused.status_code == 403 and stored(container) == [("acme.com", False, NOTE)]


@pytest.mark.parametrize(("fields", "problem"), [
    ({"note": "  "}, "note is required: say why the answer is corrected"),
    ({"note": "x" * (MAX_NOTE_CHARS + 1)}, f"note is longer than {MAX_NOTE_CHARS} characters"),
    ({"domain": "localhost"}, "is a single label, not a public host name"),
    ({"answer": ""}, "answer must be true or false"),
])
def test_bad_corrections_are_shown_next_to_the_form_with_what_was_typed(client: TestClient, container,  # noqa: ANN001
                                                                        fields: dict[str, str], problem: str) -> None:
    token = sign_in(client, issue(container))
    batch_id = doubtful_batch(container, client, token)
    shown = client.post(f"/batch/{batch_id}/correct", data=correction(token, **fields))
    assert shown.status_code == 422 and problem in shown.text, shown.text
    typed = fields.get("note", NOTE)
    assert f">{html.escape(typed, quote=False)}</textarea>" in shown.text
    assert f'href="/batch/{batch_id}/review#row-0"' in shown.text
    scripted = client.post(f"/batch/{batch_id}/correct", data=correction(token, **fields),
                           headers={"x-csrf-token": token})
    assert scripted.status_code == 422 and any(problem in e for e in scripted.json()["errors"])
    assert stored(container) == []


def test_another_keys_batch_cannot_be_corrected(container) -> None:  # noqa: ANN001
    with TestClient(container.api(), base_url="https://testserver") as owner, \
            TestClient(container.api(), base_url="https://testserver") as stranger:
        batch_id = doubtful_batch(container, owner, sign_in(owner, issue(container, "owner")))
        token = sign_in(stranger, issue(container, "stranger"))
        refused = stranger.post(f"/batch/{batch_id}/correct", data=correction(token))
        assert refused.status_code == 404 and "No such batch" in refused.text
        assert stored(container) == []


def test_a_later_batch_answers_the_corrected_domain_from_the_correction(client: TestClient,
                                                                        container) -> None:  # noqa: ANN001
    issued = issue(container)
    token = sign_in(client, issued)
    first = doubtful_batch(container, client, token)
    sent = client.post(f"/batch/{first}/correct", data=correction(token, view="batch"), follow_redirects=False)
    assert sent.headers["location"] == f"/batch/{first}?start=0#row-0"  # back to the row, on its page
    later = submit_csv(client, token)
    rows = anyio.run(lambda: container.batches().result_page(later, after=-1, limit=10))
    for job_id in {row.row.job_id for row in rows if row.row.job_id}:
        anyio.run(lambda: process_job(job_id, container.job_dependencies()))
    results = client.get(f"/batches/{later}/results", headers={"x-api-key": issued.secret})
    answered = {r["classified_domain"]: r for r in map(json.loads, results.text.splitlines()) if r["classified_domain"]}
    assert (answered["acme.com"]["source"], answered["acme.com"]["answer"], answered["acme.com"]["reason"]) == (
        "human", False, NOTE)
    assert answered["beta.org"]["source"] == "llm"
    assert client.get(f"/batch/{later}").text.count('data-source="human"') == 1
