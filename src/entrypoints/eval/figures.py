"""How an evaluation report's figures print, shared by the terminal, Markdown and HTML views."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NOT_AVAILABLE = "n/a"

# One row per candidate in every view's metrics table, in this order.
METRIC_HEADERS = ("candidate", "accuracy", "FN", "FP", "precision", "recall", "F1", "unparseable", "failed",
                  "pre-check ended", "quotes verified", "domain p50/p95", "LLM p50/p95", "LLM calls (cached)", "tokens in/out", "cost")

METRICS_NOTE = (
    "Domains the pre-check ended (no DNS, unreachable, parked) were not sent to the LLM: they are left out of "
    "every figure of the model and listed apart (pre-check ended); one labelled yes is a pre-check miss. "
    "Accuracy counts every other labelled domain (an unanswered one is wrong). The confusion matrix and precision "
    "count answered domains; recall counts every domain labelled yes (an unanswered CPG company was not "
    "found); F1 = 2TP / (2TP + FP + missed yes). Latencies are nearest-rank percentiles (LLM: per answer, "
    "retries included); LLM calls counts completions obtained, (cached) those served from the response cache. "
    "Quotes verified: the LLM's answers whose quote was found in the evidence sent; the others keep confidence 2 "
    "at most."
)


def percent(value: float | None) -> str:
    return NOT_AVAILABLE if value is None else f"{value * 100:.1f}%"


def accuracy(metrics: Mapping[str, Any]) -> str:
    """`95.4% (104/109)`: the share and the counts behind it, so a small labels file is not overread."""
    if metrics["accuracy"] is None:
        return NOT_AVAILABLE
    return f"{percent(metrics['accuracy'])} ({metrics['correct']}/{metrics['total']})"


def f1(value: float | None) -> str:
    return NOT_AVAILABLE if value is None else f"{value:.3f}"


def seconds(value: float | None) -> str:
    return NOT_AVAILABLE if value is None else f"{value:.2f}s"


def quotes_verified(metrics: Mapping[str, Any]) -> str:
    """`84.0% (21/25)`: the LLM's answers whose quote verified, of all its answers."""
    quotes = metrics["quotes"]
    if quotes["verified_share"] is None:
        return NOT_AVAILABLE
    return f"{percent(quotes['verified_share'])} ({quotes['by_status']['verified']}/{quotes['llm_answers']})"


def quote_cell(outcome: Mapping[str, Any]) -> str:
    """One answer's quote status (verified, unverified, no_quote, no_evidence); a dash where no LLM answered."""
    return outcome.get("quote_status") or "—"


def ended(metrics: Mapping[str, Any]) -> str:
    """`3 (1 labelled yes)`: the domains the pre-check ended, and its misses among them."""
    count, misses = len(metrics.get("precheck_ended", [])), len(metrics.get("precheck_misses", []))
    return f"{count} ({misses} labelled yes)" if misses else str(count)


def site_cell(outcome: Mapping[str, Any]) -> str:
    """The domain's pre-check status; a dash where it was not pre-checked."""
    return outcome.get("site_status") or "—"


def precheck_lines(document: Mapping[str, Any]) -> list[str]:
    """The run's pre-check in plain sentences (each view escapes them): off, or the domains by
    status and the misses (labelled yes, yet ended)."""
    precheck = document.get("precheck") or {}
    if not precheck.get("enabled"):
        return ["Pre-check: off (every domain was sent to the LLM)."]
    counts = ", ".join(f"{status} {count}" for status, count in precheck["by_status"].items())
    misses = precheck["misses"]
    return [f"Pre-check, domains by site status: {counts or 'none'}.",
            f"Ended by the pre-check: {len(precheck['ended'])} (not sent to the LLM, not scored).",
            f"Pre-check misses (ended, yet labelled yes): {len(misses)}" + (f": {', '.join(misses)}" if misses else "")]


def percentiles(p50: float | None, p95: float | None) -> str:
    if p50 is None and p95 is None:
        return NOT_AVAILABLE
    return f"{seconds(p50)} / {seconds(p95)}"


def cost(value: float | None, note: str | None = None) -> str:
    """A cost in US dollars; "n/a (local)" for a local server without prices, else "n/a (price unknown)"."""
    if value is not None:
        return f"${value:.4f}"
    return "n/a (local)" if note == "local" else "n/a (price unknown)"


def retries(candidate: Mapping[str, Any]) -> str:
    """The LLM calls retried, by cause: "none", or "3 (timeout 2, rate limited 1)"."""
    counted = candidate.get("retries") or {}
    if not counted.get("total"):
        return "none"
    causes = ", ".join(f"{cause} {count}" for cause, count in counted.get("by_cause", {}).items())
    return f"{counted['total']} ({causes})"


def raw_output(outcome: Mapping[str, Any] | None) -> str | None:
    """What the model wrote, for an answer that could not be read (None otherwise)."""
    return outcome.get("raw_output") if outcome else None


def duration(total_seconds: float) -> str:
    minutes, rest = divmod(total_seconds, 60)
    return f"{int(minutes)}m {rest:04.1f}s" if minutes else f"{rest:.1f}s"


def metric_row(candidate: Mapping[str, Any]) -> list[str]:
    """The METRIC_HEADERS cells for one candidate (the name unescaped: each view escapes its own way)."""
    m, latency = candidate["metrics"], candidate["metrics"]["latency"]
    return [
        candidate["name"], accuracy(m), str(len(m["false_negatives"])), str(len(m["false_positives"])),
        percent(m["precision"]), percent(m["recall"]), f1(m["f1"]),
        str(len(m["unparseable"])), str(len(m["failed"])), ended(m), quotes_verified(m),
        percentiles(latency["domain_p50"], latency["domain_p95"]),
        percentiles(latency["llm_p50"], latency["llm_p95"]),
        f"{m['llm_calls']} ({m['cached_completions']})",
        f"{m['prompt_tokens']:,}/{m['completion_tokens']:,}",
        cost(m["cost_usd"], m.get("cost_note")),
    ]


def confidence_cell(level: Mapping[str, Any]) -> str:
    """One confidence level's accuracy with its counts; `no answers` rather than a misleading 0%."""
    if not level["answered"]:
        return "no answers"
    return f"{percent(level['accuracy'])} ({level['correct']}/{level['answered']})"


def verdict_cell(verdict: Mapping[str, Any]) -> str:
    """`yes (4)`: a verdict with its confidence, or the outcome kind alone when there was no answer."""
    confidence = verdict.get("confidence")
    return verdict["verdict"] if confidence is None else f"{verdict['verdict']} ({confidence})"


def best_accuracy(document: Mapping[str, Any]) -> float | None:
    """The highest accuracy among the candidates (every candidate reaching it is highlighted)."""
    known = [c["metrics"]["accuracy"] for c in document["candidates"] if c["metrics"]["accuracy"] is not None]
    return max(known, default=None)


def unanswered_by_label(candidate: Mapping[str, Any]) -> dict[str, int]:
    """How many yes- and no-labelled domains got no answer (unparseable or failed): the confusion
    matrix counts answered domains only, so these complete its columns to the labelled totals."""
    counts = {"yes": 0, "no": 0}
    for outcome in candidate["outcomes"]:
        if outcome["verdict"] not in ("yes", "no"):
            counts[outcome["label"]] += 1
    return counts


def outcomes_by_domain(candidate: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {outcome["domain"]: outcome for outcome in candidate["outcomes"]}


def domain_note(outcome: Mapping[str, Any] | None) -> str:
    """Why a listed domain went the way it did: the model's reason, or the error when it gave none."""
    if outcome is None:
        return ""
    return outcome.get("error") or outcome.get("reason") or ""
