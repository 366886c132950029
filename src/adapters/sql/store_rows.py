"""Rows of the answers and job_domains tables to domain types and back (for store.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from firmsift.domain.model import Answer, DomainResult, Evidence, QuoteStatus, ResultStatus, Source


def epoch_time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def _evidence_json(evidence: Iterable[Evidence]) -> str:
    return json.dumps([{"url": e.url, "title": e.title, "snippet": e.snippet} for e in evidence])


def _evidence(raw: str) -> tuple[Evidence, ...]:
    return tuple(Evidence(url=e["url"], title=e.get("title", ""), snippet=e.get("snippet", "")) for e in json.loads(raw))


def _optional_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _status_value(status: QuoteStatus | None) -> str | None:
    return None if status is None else status.value


def _quote_status(value: str | None) -> QuoteStatus | None:
    return None if value is None else QuoteStatus(value)


def _optional_time(epoch: float | None) -> datetime | None:
    return None if epoch is None else epoch_time(epoch)


def _optional_epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def domain_result(row: Any) -> DomainResult:
    return DomainResult(
        domain=row["domain"], status=ResultStatus(row["status"]), answer=_optional_bool(row["answer"]),
        confidence=row["confidence"], reason=row["reason"], source=Source(row["source"]) if row["source"] else None,
        evidence=_evidence(row["evidence"]), error=row["error"], evidence_status=row["evidence_status"],
        search_provider=row["search_provider"],
        quote=row["quote"], quote_status=_quote_status(row["quote_status"]),
        site_status=row["site_status"], redirected_to=row["redirected_to"],
        redirected_answer=_optional_bool(row["redirected_answer"]),
        tokens_in=row["tokens_in"], tokens_out=row["tokens_out"], cost_usd=row["cost_usd"],
        answer_tokens_in=row["answer_tokens_in"], answer_tokens_out=row["answer_tokens_out"],
        answer_cost_usd=row["answer_cost_usd"], evidence_reused_from=row["evidence_reused_from"],
        evidence_searched_at=_optional_time(row["evidence_searched_at"]),
    )


def stored_answer(row: Any) -> Answer:
    return Answer(
        domain=row["domain"], classifier=row["classifier"], status=ResultStatus(row["status"]),
        answered_at=epoch_time(row["answered_at"]), source=Source(row["source"]), answer=_optional_bool(row["answer"]),
        confidence=row["confidence"], reason=row["reason"], evidence=_evidence(row["evidence"]),
        error=row["error"], raw_output=row["raw_output"], model=row["model"], prompt_version=row["prompt_version"],
        evidence_status=row["evidence_status"], search_provider=row["search_provider"],
        quote=row["quote"], quote_status=_quote_status(row["quote_status"]),
        site_status=row["site_status"], redirected_to=row["redirected_to"],
        redirected_answer=_optional_bool(row["redirected_answer"]),
        tokens_in=row["tokens_in"], tokens_out=row["tokens_out"], cost_usd=row["cost_usd"],
        evidence_reused_from=row["evidence_reused_from"],
        evidence_searched_at=_optional_time(row["evidence_searched_at"]),
    )


def answer_params(answer: Answer) -> dict[str, Any]:
    return {
        "domain": answer.domain, "classifier": answer.classifier, "status": answer.status.value,
        "source": answer.source.value, "answer": answer.answer, "confidence": answer.confidence,
        "reason": answer.reason, "evidence": _evidence_json(answer.evidence), "error": answer.error,
        "raw_output": answer.raw_output, "model": answer.model, "prompt_version": answer.prompt_version,
        "answered_at": answer.answered_at.timestamp(), "evidence_status": answer.evidence_status,
        "search_provider": answer.search_provider,
        "quote": answer.quote, "quote_status": _status_value(answer.quote_status),
        "site_status": answer.site_status, "redirected_to": answer.redirected_to,
        "redirected_answer": answer.redirected_answer,
        "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out, "cost_usd": answer.cost_usd,
        "evidence_reused_from": answer.evidence_reused_from,
        "evidence_searched_at": _optional_epoch(answer.evidence_searched_at),
    }


def result_values(result: DomainResult) -> dict[str, Any]:
    """The job_domains columns of a finished result (finished_at aside)."""
    return {
        "status": result.status.value, "source": result.source.value if result.source else None,
        "answer": result.answer, "confidence": result.confidence, "reason": result.reason,
        "evidence": _evidence_json(result.evidence), "error": result.error,
        "evidence_status": result.evidence_status, "search_provider": result.search_provider,
        "quote": result.quote, "quote_status": _status_value(result.quote_status),
        "site_status": result.site_status, "redirected_to": result.redirected_to,
        "redirected_answer": result.redirected_answer,
        "tokens_in": result.tokens_in, "tokens_out": result.tokens_out, "cost_usd": result.cost_usd,
        "answer_tokens_in": result.answer_tokens_in, "answer_tokens_out": result.answer_tokens_out,
        "answer_cost_usd": result.answer_cost_usd,
        "evidence_reused_from": result.evidence_reused_from,
        "evidence_searched_at": _optional_epoch(result.evidence_searched_at),
    }
