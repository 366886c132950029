"""The pre-check in the evaluation report: each domain's site status, the counts by status, the
domains it ended (outside the model's figures) and its misses, in every view."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from firmsift.domain.evaluation import LabelledDomain, Outcome, OutcomeKind
from firmsift.entrypoints.eval import figures as fig
from firmsift.entrypoints.eval.document import report_document
from firmsift.entrypoints.eval.report import render_html, render_markdown, summary_table
from firmsift.services.evaluation_run import CandidateSpec

HOSTILE_REASON = "parked </td><script>alert(1)</script>|x"
LABELS = [LabelledDomain("snacks.example", True), LabelledDomain("bank.example", False),
          LabelledDomain("pretzel.example", True), LabelledDomain("gone.example", False),
          LabelledDomain("walled.example", True), LabelledDomain("known.example", True)]


def _answered(domain: str, label: bool, answer: bool, status: str) -> Outcome:
    return Outcome(domain, label, OutcomeKind.ANSWERED, answer=answer, confidence=4, reason="because",
                   llm_seconds=1.0, site_status=status)


def _ended(domain: str, label: bool, status: str, reason: str) -> Outcome:
    return Outcome(domain, label, OutcomeKind.ENDED, reason=reason, source="precheck", site_status=status)


def _document(precheck: bool = True) -> dict[str, Any]:
    """2 of 4 scored right (bank.example and walled.example wrong); pretzel.example, a CPG company
    the pre-check found parked, is its miss; known.example was answered by the known companies."""
    outcomes = [
        _answered("snacks.example", True, True, "live"),
        _answered("bank.example", False, True, "redirected"),
        _ended("pretzel.example", True, "parked", HOSTILE_REASON),
        _ended("gone.example", False, "no_dns", "no DNS: the domain does not exist (NXDOMAIN)"),
        _answered("walled.example", True, False, "blocked"),
        Outcome("known.example", True, OutcomeKind.ANSWERED, answer=True, confidence=5, source="known_company"),
    ]
    spec = CandidateSpec("alpha", "m", None, "cpg", "v3", "homepage,searxng")
    return report_document(
        labels_file="labels.csv", labels=LABELS, evidence="live", precheck=precheck,
        started_at=datetime(2026, 5, 1, tzinfo=timezone.utc), finished_at=datetime(2026, 5, 1, tzinfo=timezone.utc),
        specs=[spec], outcomes={"alpha": outcomes})


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return _document()


def test_the_document_counts_ended_domains_apart_from_the_model_s_figures(document: dict[str, Any]) -> None:
    metrics = document["candidates"][0]["metrics"]
    assert (metrics["total"], metrics["correct"], metrics["accuracy"]) == (4, 2, 0.5)
    assert metrics["recall"] == 2 / 3  # labelled yes and scored: snacks, walled, known
    assert metrics["precheck_ended"] == ["gone.example", "pretzel.example"]
    assert metrics["precheck_misses"] == ["pretzel.example"]
    assert document["precheck"] == {
        "enabled": True,
        "by_status": {"blocked": 1, "live": 1, "no_dns": 1, "not pre-checked": 1, "parked": 1, "redirected": 1},
        "ended": [{"domain": "pretzel.example", "label": "yes", "site_status": "parked", "reason": HOSTILE_REASON},
                  {"domain": "gone.example", "label": "no", "site_status": "no_dns",
                   "reason": "no DNS: the domain does not exist (NXDOMAIN)"}],
        "misses": ["pretzel.example"],
    }
    assert [o["site_status"] for o in document["candidates"][0]["outcomes"]] == [
        "live", "redirected", "parked", "no_dns", "blocked", None]
    assert document["disagreements"] == []  # one candidate: nothing to disagree with


def test_the_summary_shows_the_counts_by_status_and_the_misses(document: dict[str, Any]) -> None:
    text = summary_table(document)
    assert "50.0% (2/4)" in text and "2 (1 labelled yes)" in text
    assert ("Pre-check, domains by site status: blocked 1, live 1, no_dns 1, not pre-checked 1, parked 1, "
            "redirected 1.") in text
    assert "Pre-check misses (ended, yet labelled yes): 1: pretzel.example" in text
    assert "ended by the pre-check (not scored) (2): gone.example, pretzel.example" in text


def test_markdown_shows_each_domain_s_status_and_the_ended_domains(document: dict[str, Any]) -> None:
    text = render_markdown(document)
    assert "## Pre-check" in text and "Pre-check misses (ended, yet labelled yes): 1: pretzel.example" in text
    assert "| pretzel.example | yes ✗ | parked | parked &lt;/td&gt;&lt;script&gt;" in text
    assert "| domain | label | site | verdict | right |" in text
    assert "| snacks.example | yes | live | yes (4) | yes |" in text
    assert "| pretzel.example | yes | parked | ended | — | precheck |" in text  # not marked wrong: not scored
    assert "| known.example | yes | — | yes (5) | yes | known\\_company |" in text


def test_html_shows_each_domain_s_status_and_marks_the_misses(document: dict[str, Any]) -> None:
    page = render_html(document)
    assert '<section id="precheck">' in page and '<a href="#precheck">' in page
    assert ('<tr class="wrong"><td><code>pretzel.example</code></td><td>yes ✗</td><td>parked</td>'
            '<td class="text">parked &lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;|x</td></tr>') in page
    assert "<tr><td><code>gone.example</code></td><td>no</td><td>no_dns</td>" in page
    assert "<script>" not in page
    assert "<th>site</th>" in page
    assert ("<tr><td><code>pretzel.example</code></td><td>yes</td><td>parked</td><td>ended</td>"
            "<td>precheck</td>") in page
    assert "alpha: 6 domains, 2 wrong" in page
    assert "Ended by the pre-check (not scored) (2)" in page


def test_a_run_without_the_pre_check_says_so() -> None:
    document = _document(precheck=False)
    for text in (summary_table(document), render_markdown(document), render_html(document)):
        assert "Pre-check: off (every domain was sent to the LLM)." in text
    assert fig.ended({"precheck_ended": [], "precheck_misses": []}) == "0"
