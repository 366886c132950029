"""The evaluation report as one JSON-ready document: what report.json holds and every view renders."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from firmsift.domain.evaluation import LabelledDomain, Outcome, OutcomeKind
from firmsift.domain.evaluation_scores import Score, disagreements, score
from firmsift.services.evaluation_run import CandidateSpec

SCHEMA = "firmsift-eval/1"
RAW_OUTPUT_LIMIT = 2000  # characters of an unparseable answer kept in the report
NOT_PRECHECKED = "not pre-checked"  # a domain without a site status: pre-check off, known company, old snapshot


def report_document(
    *,
    labels_file: str,
    labels: Sequence[LabelledDomain],
    evidence: str,
    precheck: bool,
    started_at: datetime,
    finished_at: datetime,
    specs: Sequence[CandidateSpec],
    outcomes: Mapping[str, Sequence[Outcome]],
    local: Collection[str] = frozenset(),
) -> dict[str, Any]:
    """The whole report. `evidence` is how search evidence was obtained: live, recorded or replayed;
    `precheck` whether the run pre-checked the domains; `local` the candidates (by name) whose LLM
    is a server of the user's own, whose cost without a price is "local" rather than unknown."""
    by_domain = {name: {o.domain: o for o in found} for name, found in outcomes.items()}
    return {
        "schema": SCHEMA,
        "labels_file": labels_file,
        "evidence": evidence,
        "started_at": started_at.isoformat(timespec="seconds"),
        "finished_at": finished_at.isoformat(timespec="seconds"),
        "seconds": round((finished_at - started_at).total_seconds(), 3),
        "labelled": {"total": len(labels), "yes": sum(i.label for i in labels),
                     "no": sum(not i.label for i in labels)},
        "precheck": _precheck(precheck, labels, outcomes),
        "candidates": [_candidate(spec, outcomes[spec.name], local=spec.name in local) for spec in specs],
        "disagreements": [
            {"domain": row.domain, "label": _yes_no(row.label), "notes": row.notes,
             "verdicts": [{"candidate": name, "verdict": verdict, "confidence": confidence}
                          for name, verdict, confidence in row.verdicts]}
            for row in disagreements(labels, by_domain)
        ],
    }


def _precheck(enabled: bool, labels: Sequence[LabelledDomain],
              outcomes: Mapping[str, Sequence[Outcome]]) -> dict[str, Any]:
    """The run's pre-check, per labelled domain (one look for every candidate): how many domains
    got each status, the domains it ended (not sent to the LLM, not scored) and, of those, the
    ones labelled yes: the pre-check's misses."""
    seen: dict[str, Outcome] = {}
    for found in outcomes.values():
        for outcome in found:
            if outcome.site_status is not None:
                seen.setdefault(outcome.domain, outcome)
    by_status: dict[str, int] = {}
    for item in labels:
        status = seen[item.domain].site_status if item.domain in seen else NOT_PRECHECKED
        by_status[str(status)] = by_status.get(str(status), 0) + 1
    ended = [{"domain": item.domain, "label": _yes_no(item.label), "site_status": seen[item.domain].site_status,
              "reason": seen[item.domain].reason}
             for item in labels if item.domain in seen and seen[item.domain].kind is OutcomeKind.ENDED]
    return {"enabled": enabled, "by_status": dict(sorted(by_status.items())), "ended": ended,
            "misses": [row["domain"] for row in ended if row["label"] == "yes"]}


def _candidate(spec: CandidateSpec, outcomes: Sequence[Outcome], *, local: bool) -> dict[str, Any]:
    # A local server has no price: its cost is "n/a (local)" unless the candidate gave prices.
    shown = [_outcome(o) | ({"cost_note": "local"} if local and o.cost_usd is None else {}) for o in outcomes]
    metrics = _metrics(score(outcomes))
    return {
        "name": spec.name,
        "model": spec.model,
        "api_base": _without_credentials(spec.api_base),
        "classifier": spec.classifier,
        "prompt_version": spec.prompt_version,
        "search": spec.search,
        "max_tokens": spec.max_tokens,
        "metrics": metrics | ({"cost_note": "local"} if local and metrics["cost_usd"] is None else {}),
        "outcomes": shown,
    }


def _metrics(figures: Score) -> dict[str, Any]:
    return {
        "total": figures.total,
        "correct": figures.correct,
        "accuracy": figures.accuracy,
        "precision": figures.precision,
        "recall": figures.recall,
        "f1": figures.f1,
        "confusion": {"true_positives": figures.true_positives, "false_positives": figures.false_positives,
                      "true_negatives": figures.true_negatives, "false_negatives": figures.false_negatives},
        "false_negatives": list(figures.false_negative_domains),
        "false_positives": list(figures.false_positive_domains),
        "unparseable": list(figures.unparseable_domains),
        "failed": list(figures.failed_domains),
        "search_failed": list(figures.search_failed_domains),
        "precheck_ended": list(figures.ended_domains),
        "precheck_misses": list(figures.precheck_misses),
        "by_confidence": [{"confidence": level.confidence, "answered": level.answered, "correct": level.correct,
                           "accuracy": level.accuracy} for level in figures.by_confidence],
        "latency": {"domain_p50": figures.domain_seconds_p50, "domain_p95": figures.domain_seconds_p95,
                    "llm_p50": figures.llm_seconds_p50, "llm_p95": figures.llm_seconds_p95},
        "llm_calls": figures.llm_calls,
        "cached_completions": figures.cached_completions,
        "prompt_tokens": figures.prompt_tokens,
        "completion_tokens": figures.completion_tokens,
        "cost_usd": figures.cost_usd,
        # Of the LLM's answers, how many quoted their evidence verifiably, and what the others did.
        "quotes": {"llm_answers": sum(count for _, count in figures.quote_statuses),
                   "verified_share": figures.verified_share,
                   "by_status": {status.value: count for status, count in figures.quote_statuses}},
    }


def _outcome(outcome: Outcome) -> dict[str, Any]:
    return {
        "domain": outcome.domain,
        "label": _yes_no(outcome.label),
        "verdict": outcome.verdict,
        "correct": outcome.correct,
        "confidence": outcome.confidence,
        "reason": outcome.reason,
        "error": outcome.error,
        "source": outcome.source,
        "site_status": outcome.site_status,
        "search_seconds": round(outcome.search_seconds, 6),
        "search_error": outcome.search_error,
        "llm_seconds": None if outcome.llm_seconds is None else round(outcome.llm_seconds, 6),
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
        "cost_usd": outcome.cost_usd,
        "from_cache": outcome.from_cache,
        "quote": outcome.quote,
        "quote_status": outcome.quote_status.value if outcome.quote_status else None,
        # Untrusted model output, capped: every view escapes it.
        "raw_output": None if outcome.raw_output is None else outcome.raw_output[:RAW_OUTPUT_LIMIT],
    }


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def _without_credentials(url: str | None) -> str | None:
    """An API base as reports may show it: no user:password@ and no query (which may hold a key)."""
    if not url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
