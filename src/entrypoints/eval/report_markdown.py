"""The evaluation report as Markdown (report.md): every table of the HTML report, in plain text."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from firmsift.domain.excerpts import excerpt
from firmsift.entrypoints.eval import figures as fig

# Reasons, errors, notes and names are LLM output and web text: in a table cell, a `|` would open a
# column, a newline end the row, a backtick or `<` start code or HTML, `[` a link.
_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
_ESCAPES = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[",
                          "]": "\\]", "#": "\\#", "&": "&amp;", "<": "&lt;", ">": "&gt;"})


def escape(text: object) -> str:
    """Text safe in a Markdown table cell or list item: no markup, no line break."""
    return _LINE_BREAKS.sub(" ", str(text)).translate(_ESCAPES).strip()


RAW_OUTPUT_SHOWN = 500  # characters of an unparseable answer in the Markdown report (report.json keeps more)


def render_markdown(document: Mapping[str, Any]) -> str:
    candidates = document["candidates"]
    labelled = document["labelled"]
    parts = [
        "# firmsift evaluation",
        "\n".join([
            f"- Labels file: {escape(document['labels_file'])}",
            f"- Labelled domains: {labelled['total']} (yes {labelled['yes']}, no {labelled['no']})",
            f"- Evidence: {escape(document['evidence'])}",
            f"- Started: {escape(document['started_at'])}, finished: {escape(document['finished_at'])} "
            f"({fig.duration(document['seconds'])})",
        ]),
        "## Metrics",
        _table(fig.METRIC_HEADERS, [fig.metric_row(c) for c in candidates]),
        fig.METRICS_NOTE,
        *_precheck(document),
        "## Accuracy by confidence",
        _table(["candidate", *(f"confidence {level}" for level in _levels(candidates))],
               [[c["name"], *(fig.confidence_cell(level) for level in c["metrics"]["by_confidence"])]
                for c in candidates]),
        *_disagreements(document),
    ]
    for candidate in candidates:
        parts.extend(_candidate(candidate))
    return "\n\n".join(parts) + "\n"


def _precheck(document: Mapping[str, Any]) -> list[str]:
    parts = ["## Pre-check", "\n".join(f"- {escape(line)}" for line in fig.precheck_lines(document))]
    ended = (document.get("precheck") or {}).get("ended") or []
    if ended:
        parts.append("A domain labelled yes here (✗) is a pre-check miss: a CPG company the pre-check wrote off.")
        parts.append(_table(["domain", "label", "site status", "reason"],
                            [[r["domain"], r["label"] + (" ✗" if r["label"] == "yes" else ""), r["site_status"],
                              r["reason"]] for r in ended]))
    return parts


def _levels(candidates: Sequence[Mapping[str, Any]]) -> list[int]:
    if not candidates:
        return []
    return [level["confidence"] for level in candidates[0]["metrics"]["by_confidence"]]


def _disagreements(document: Mapping[str, Any]) -> list[str]:
    rows = document["disagreements"]
    title = f"## Disagreements ({len(rows)})"
    if not rows:
        return [title, "Every candidate gave the same verdict on every labelled domain."]
    names = [c["name"] for c in document["candidates"]]
    body = []
    for row in rows:
        verdicts = {v["candidate"]: v for v in row["verdicts"]}
        body.append([row["domain"], row["label"], row["notes"],
                     *(_verdict(verdicts.get(name), row["label"]) for name in names)])
    legend = "A verdict in bold with ✗ disagrees with the label; the figure in brackets is the confidence."
    return [title, legend, _table(["domain", "label", "notes", *names], body, raw_from=3)]


def _verdict(verdict: Mapping[str, Any] | None, label: str) -> str:
    if verdict is None:
        return "—"
    text = escape(fig.verdict_cell(verdict))
    return text if verdict["verdict"] == label else f"**{text} ✗**"


def _candidate(candidate: Mapping[str, Any]) -> list[str]:
    m, confusion = candidate["metrics"], candidate["metrics"]["confusion"]
    unanswered = fig.unanswered_by_label(candidate)
    described = [f"- {title}: {escape(candidate[key])}" for key, title in
                 (("model", "Model"), ("api_base", "API base"), ("classifier", "Classifier"),
                  ("prompt_version", "Prompt version"), ("search", "Search"))
                 if candidate.get(key) is not None]
    described.append(f"- LLM retries: {escape(fig.retries(candidate))}")
    matrix = _table(["", "label yes", "label no"], [
        ["predicted yes", str(confusion["true_positives"]), str(confusion["false_positives"])],
        ["predicted no", str(confusion["false_negatives"]), str(confusion["true_negatives"])],
        ["no answer", str(unanswered["yes"]), str(unanswered["no"])],
    ])
    by_domain = fig.outcomes_by_domain(candidate)
    parts = [f"## Candidate: {escape(candidate['name'])}", "\n".join(described), matrix]
    for key, title in (("false_negatives", "False negatives"), ("false_positives", "False positives"),
                       ("unparseable", "Unparseable"), ("failed", "Failed"),
                       ("search_failed", "Asked without evidence (search failed)"),
                       ("precheck_ended", "Ended by the pre-check (not scored)")):
        if m.get(key):
            parts.append(f"**{title} ({len(m[key])})**")
            parts.append("\n".join(_listed(domain, by_domain.get(domain)) for domain in m[key]))
        elif key in ("false_negatives", "false_positives"):
            parts.append(f"**{title}**: none")
    parts.append(f"### Outcomes: {escape(candidate['name'])}")
    parts.append(_table(
        ["domain", "label", "site", "verdict", "right", "source", "quote", "search", "LLM", "tokens in/out", "cost",
         "reason / error"],
        [[o["domain"], o["label"], fig.site_cell(o), fig.verdict_cell(o), _right(o), o["source"],
          fig.quote_cell(o), fig.seconds(o["search_seconds"]), fig.seconds(o["llm_seconds"]),
          f"{o['prompt_tokens']}/{o['completion_tokens']}", fig.cost(o["cost_usd"], o.get("cost_note")), fig.domain_note(o)]
         for o in candidate["outcomes"]]))
    return parts


def _right(outcome: Mapping[str, Any]) -> str:
    """yes / NO, or a dash for a domain the pre-check ended: not the model's answer, not scored."""
    if outcome["verdict"] == "ended":
        return "—"
    return "yes" if outcome["correct"] else "NO"


def _listed(domain: str, outcome: Mapping[str, Any] | None) -> str:
    confidence = "" if outcome is None or outcome["confidence"] is None else f" (confidence {outcome['confidence']})"
    note = fig.domain_note(outcome)
    raw = fig.raw_output(outcome)
    wrote = f"\n  - what the model wrote: {escape(excerpt(raw, RAW_OUTPUT_SHOWN))}" if raw is not None else ""
    return f"- {escape(domain)}{confidence}" + (f": {escape(note)}" if note else "") + wrote


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], raw_from: int | None = None) -> str:
    """A GitHub-flavoured Markdown table; body cells from column `raw_from` on come escaped already."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    body = [line([cell if raw_from is not None and i >= raw_from else escape(cell) for i, cell in enumerate(row)])
            for row in rows]
    return "\n".join([line([escape(h) for h in headers]), "|" + "|".join("---" for _ in headers) + "|", *body])
