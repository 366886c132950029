"""The evaluation report's views (terminal table, Markdown, HTML) and files, from a hand-built document."""

from __future__ import annotations

import html
import html.parser
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.evaluation import InMemorySnapshots
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM
from firmsift.domain.evaluation import GatheredEvidence, LabelledDomain, Outcome, OutcomeKind
from firmsift.domain.model import Evidence, QuoteStatus
from firmsift.entrypoints.eval import figures as fig
from firmsift.entrypoints.eval.document import report_document
from firmsift.entrypoints.eval.report import render_html, render_markdown, summary_table, write_reports
from firmsift.entrypoints.eval.report_page import CONTENT_SECURITY_POLICY
from firmsift.entrypoints.eval.report_markdown import escape as md_escape
from firmsift.services.evaluation_run import (
    Candidate,
    CandidateSpec,
    Evaluation,
    ReplayedEvidence,
    evaluate,
)

HOSTILE_REASON = "</td><script>alert(1)</script>|x"
HOSTILE_DOMAIN = 'evil"<img src=x onerror=alert(3)>.example'
HOSTILE_NAME = 'beta "<i>b</i>"|`x`'

LABELS = [
    LabelledDomain("acme-foods.example", True, "snacks maker — café"),
    LabelledDomain("hostile.example", True, "note | with `ticks` <b>and</b>\na newline"),
    LabelledDomain("steelworks.example", False),
    LabelledDomain("beverage.example", True),
    LabelledDomain("software.example", False),
    LabelledDomain(HOSTILE_DOMAIN, False),
]


def _answer(domain: str, label: bool, answer: bool, confidence: int, reason: str = "because",
            cost: float | None = 0.0005, quote: QuoteStatus = QuoteStatus.VERIFIED) -> Outcome:
    return Outcome(domain, label, OutcomeKind.ANSWERED, answer=answer, confidence=confidence, reason=reason,
                   search_seconds=0.5, llm_seconds=1.25, prompt_tokens=1000, completion_tokens=50, cost_usd=cost,
                   quote="a passage of the page <b>", quote_status=quote)


def _document() -> dict[str, Any]:
    """alpha: 4/6 right, one false negative (with a hostile reason), one false positive; level 2 unused.
    beta: never says yes (precision unknown), a price unknown, a failure and an unparseable answer."""
    label = {item.domain: item.label for item in LABELS}
    alpha = [
        _answer("acme-foods.example", True, True, 5),
        _answer("hostile.example", True, False, 3, HOSTILE_REASON, quote=QuoteStatus.UNVERIFIED),
        _answer("steelworks.example", False, True, 4, "sells | steel\nand `food`"),
        _answer("beverage.example", True, True, 5),
        _answer("software.example", False, False, 4),
        _answer(HOSTILE_DOMAIN, False, False, 1),
    ]
    beta = [
        _answer("acme-foods.example", True, False, 2, cost=None),
        Outcome("hostile.example", True, OutcomeKind.FAILED, error="timeout </td><script>x</script>",
                search_seconds=0.5, cost_usd=None),
        _answer("steelworks.example", False, False, 5),
        _answer("beverage.example", True, False, 1),
        _answer("software.example", False, False, 5),
        Outcome(HOSTILE_DOMAIN, label[HOSTILE_DOMAIN], OutcomeKind.UNPARSEABLE, reason="<<garbled>>",
                error="unreadable answer: `|`", search_seconds=0.5, llm_seconds=2.0),
    ]
    specs = [CandidateSpec("alpha", "openai/model-a", "https://user:pw@llm.example/v1?key=s", "cpg", "v3", "searxng"),
             CandidateSpec(HOSTILE_NAME, "local/<model>", None, "cpg", "v2", "homepage")]
    return report_document(
        labels_file="labels <test>.csv", labels=LABELS, evidence="replayed", precheck=False,
        started_at=datetime(2026, 5, 1, 12, 0, 0, tzinfo=timezone.utc),
        finished_at=datetime(2026, 5, 1, 12, 1, 30, tzinfo=timezone.utc),
        specs=specs, outcomes={"alpha": alpha, HOSTILE_NAME: beta},
    )


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return _document()


def test_the_fixture_has_the_figures_the_views_must_show(document: dict[str, Any]) -> None:
    alpha, beta = (c["metrics"] for c in document["candidates"])
    assert (alpha["accuracy"], alpha["precision"], alpha["cost_usd"]) == (4 / 6, 2 / 3, pytest.approx(0.003))
    assert (beta["accuracy"], beta["precision"], beta["f1"], beta["cost_usd"]) == (2 / 6, None, 0.0, None)  # found none of the CPG companies
    assert len(document["disagreements"]) == 5


def test_summary_shows_every_metric_and_lists_false_negatives_before_false_positives(document: dict[str, Any]) -> None:
    text = summary_table(document)
    for expected in ("66.7% (4/6)", "33.3% (2/6)", "66.7%", "0.667", "n/a", "$0.0030", "n/a (price unknown)",
                     "1.75s / 1.75s", "1.75s / 2.50s", "1.25s / 2.00s", "6 (0)", "5 (0)", "6,000/300", "disagreements: 5",
                     "83.3% (5/6)", "100.0% (4/4)"):  # quotes verified: alpha's hostile.example did not
        assert expected in text
    for candidate in document["candidates"]:
        for cell in fig.metric_row(candidate):
            assert cell in text
    alpha = text[text.index("\nalpha:"):]
    assert alpha.index("false negatives (1): hostile.example") < alpha.index("false positives (1): steelworks.example")
    assert "false negatives (2): acme-foods.example, beverage.example" in text
    assert "failed (1): hostile.example" in text
    header, rule, *rows = text.splitlines()[:4]
    assert header.startswith("candidate") and set(rule) <= {"-", " "} and len(rows) == 2


def test_summary_keeps_control_characters_off_the_terminal() -> None:
    document = _document()
    document["candidates"][0]["metrics"]["false_negatives"] = ["bad\x1b[2Jdomain.example"]
    assert "\x1b" not in summary_table(document)


def test_markdown_shows_every_metric_escaped(document: dict[str, Any]) -> None:
    text = render_markdown(document)
    for candidate in document["candidates"]:
        for cell in fig.metric_row(candidate):
            assert md_escape(cell) in text
    for expected in ("66.7% (4/6)", "n/a (price unknown)", "$0.0030", "no answers", "50.0% (1/2)",
                     "| unverified |", "| verified |"):
        assert expected in text
    assert "<" not in text and "\r" not in text
    assert re.search(r"(?<!\\)`", text) is None  # every backtick escaped
    assert "\\<" not in text and "&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;\\|x" in text


def _cells(line: str) -> list[str]:
    """Split a Markdown table row as GitHub does: a backslash escapes the next character, `|` separates."""
    cells, current, index = [], "", 1
    while index < len(line) - 1:
        char = line[index]
        if char == "\\":
            current += line[index:index + 2]
            index += 2
            continue
        if char == "|":
            cells.append(current)
            current = ""
        else:
            current += char
        index += 1
    return [*cells, current]


def test_markdown_tables_keep_their_columns_with_hostile_text(document: dict[str, Any]) -> None:
    tables: list[list[str]] = []
    previous = ""
    for line in render_markdown(document).splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append(line)
        previous = line
    assert len(tables) >= 7  # metrics, confidence, disagreements, and per candidate a matrix and its outcomes
    for table in tables:
        widths = {len(_cells(row)) for row in table}
        assert len(widths) == 1, table
        assert table[1].replace("|", "").replace("-", "") == ""
    disagreements = next(t for t in tables if t[0].startswith("| domain | label | notes"))
    assert len(disagreements) == 2 + 5 and len(_cells(disagreements[0])) == 5


def test_html_shows_every_metric_and_highlights_the_best_accuracy(document: dict[str, Any]) -> None:
    page = render_html(document)
    for candidate in document["candidates"]:
        for cell in fig.metric_row(candidate):
            assert html.escape(cell, quote=True) in page
    assert '<th class="best">alpha<span class="badge">best accuracy</span></th>' in page
    assert page.count('class="badge"') == 1
    assert page.count('<td class="num best">') == len(fig.METRIC_HEADERS) - 1  # alpha's whole column
    for expected in ("labels &lt;test&gt;.csv", "6 (3 yes, 3 no)", "replayed", "2026-05-01T12:00:00+00:00",
                     "1m 30.0s", "https://llm.example/v1", "<th>quote</th>", "<td>unverified</td>"):
        assert expected in page
    assert "pw@" not in page and "key=s" not in page


def test_html_escapes_untrusted_text_everywhere(document: dict[str, Any]) -> None:
    page = render_html(document)
    assert "<script" not in page.lower()
    for raw in ("<i>", "<img", "<model>", "<b>", "<<garbled", '"<'):
        assert raw not in page
    assert "&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;|x" in page
    # Every tag is one of ours: no event handler attribute made it in from the data.
    assert not [tag for tag in re.findall(r"<[a-zA-Z][^<>]*>", page) if re.search(r"\son\w+\s*=", tag)]
    assert '<meta http-equiv="Content-Security-Policy" content="default-src &#x27;none&#x27;; ' \
           "style-src &#x27;unsafe-inline&#x27;; img-src data:\">" in page


def test_html_loads_nothing_and_runs_nothing(document: dict[str, Any]) -> None:
    page = render_html(document)
    assert all(link.startswith("#") for link in re.findall(r'(?:href|src)="([^"]*)"', page))
    assert "<link" not in page and "@import" not in page and "url(" not in page


def test_html_lists_false_negatives_first_and_prominently(document: dict[str, Any]) -> None:
    page = render_html(document)
    section = page[page.index('id="candidate-0"'):page.index('id="candidate-1"')]
    boxes = re.findall(r'<div class="box ([a-z]*)"><h4>([^<]*)</h4>', section)
    assert [title.split(" (")[0] for _, title in boxes] == [
        "False negatives: CPG companies missed", "False positives", "Unparseable answers", "Failed"]
    assert boxes[0][0] == "fn" and "<code>hostile.example</code> (confidence 3)" in section
    assert "<th>no answer</th><td>0</td><td>0</td>" in section
    beta = page[page.index('id="candidate-1"'):]
    assert "<th>no answer</th><td>1</td><td>1</td>" in beta  # a failed yes, an unparseable no


def test_disagreements_mark_the_wrong_verdicts(document: dict[str, Any]) -> None:
    page = render_html(document)
    table = page[page.index('id="disagreements"'):page.index('id="outcomes"')]
    assert table.count("<tr><td><code>") == 5
    assert '<td class="wrong">failed ✗</td>' in table and "<td>yes (5)</td>" in table
    assert "note | with `ticks` &lt;b&gt;and&lt;/b&gt;\na newline" in table


@pytest.mark.parametrize("index", [0, 1])
def test_confidence_chart_leaves_gaps_where_nothing_was_answered(document: dict[str, Any], index: int) -> None:
    page = render_html(document)
    chart = page[page.index("<svg"):page.index("</svg>")]
    levels = document["candidates"][index]["metrics"]["by_confidence"]
    bars = set(map(int, re.findall(rf'class="bar" data-confidence="(\d)" data-series="{index}"', chart)))
    gaps = set(map(int, re.findall(rf'class="gap" data-confidence="(\d)" data-series="{index}"', chart)))
    assert bars == {level["confidence"] for level in levels if level["answered"]}
    assert gaps == {level["confidence"] for level in levels if not level["answered"]}
    assert gaps  # the fixture leaves some level unused for both candidates
    assert not re.search(r'height="0(\.0)?"', chart)


def test_write_reports_writes_three_files_and_json_round_trips(document: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "first"
    paths = write_reports(document, folder)
    assert [p.name for p in paths] == ["report.json", "report.md", "report.html"]
    assert sorted(p.name for p in folder.iterdir()) == ["report.html", "report.json", "report.md"]  # no temp left
    assert json.loads(paths[0].read_text(encoding="utf-8")) == document
    assert paths[1].read_text(encoding="utf-8") == render_markdown(document)
    assert paths[2].read_text(encoding="utf-8") == render_html(document)
    assert "maker — café" in paths[0].read_text(encoding="utf-8")  # ensure_ascii=False: text kept as written


def test_write_reports_replaces_earlier_reports(document: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("stale")
    write_reports(document, tmp_path)
    assert (tmp_path / "report.md").read_text(encoding="utf-8").startswith("# firmsift evaluation")


def test_views_cope_with_no_candidates() -> None:
    document = _document()
    document["candidates"], document["disagreements"] = [], []
    assert "disagreements: 0" in summary_table(document)
    assert "Every candidate gave the same verdict" in render_markdown(document)
    assert "<svg" in render_html(document)


class _Attributes(html.parser.HTMLParser):
    """Every attribute of every element of a page, as (tag, name, value)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [(tag, name, value or "") for name, value in attrs]


@pytest.mark.anyio
async def test_html_never_links_or_unescapes_hostile_evidence_urls() -> None:
    """Evidence URLs are returned raw by the API; the report must not turn one into a live link."""

    hostile_url = 'javascript:alert(document.domain)//"><script>alert(1)</script>'
    snapshots = InMemorySnapshots()
    snapshots.save("homepage", "evil.example", GatheredEvidence(
        (Evidence(hostile_url, '"><img src=x onerror=alert(2)>', "data:text/html,<script>alert(3)</script>"),), 0.1))
    reply = json.dumps({"is_cpg": True, "confidence": 4,
                        "reasoning": f'See <a href="{hostile_url}">this</a> and {hostile_url}'})
    catalog = load_catalog()["cpg"]
    spec = CandidateSpec("alpha", "m", None, "cpg", catalog.prompt_version, "homepage")
    run = Evaluation([LabelledDomain("evil.example", True)],
                     [Candidate(spec, catalog, ScriptedLLM(reply),
                                ReplayedEvidence(snapshots, "homepage", ["evil.example"]))], FixedPricing(0, 0))
    outcomes = await evaluate(run)
    page = render_html(report_document(
        labels_file="labels.csv", labels=[LabelledDomain("evil.example", True)], evidence="replayed", precheck=False,
        started_at=datetime(2026, 5, 1, tzinfo=timezone.utc), finished_at=datetime(2026, 5, 1, tzinfo=timezone.utc),
        specs=[spec], outcomes=outcomes))

    attributes = _Attributes()
    attributes.feed(page)
    links = [value for _, name, value in attributes.found if name in ("href", "src", "action", "formaction")]
    assert links and all(link.startswith(("#", "http://", "https://")) for link in links), links
    values = [value.lower() for tag, _, value in attributes.found if value != CONTENT_SECURITY_POLICY]
    assert not any("javascript:" in value or "data:" in value for value in values)
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert html.escape(f'<a href="{hostile_url}">', quote=True) in page  # shown as text, escaped
