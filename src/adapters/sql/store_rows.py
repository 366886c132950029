"""Rows of the jobs, answers and job_domains tables to domain types and back (for store.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from firmsift.domain.batch_results import ShownResult, shown_members
from firmsift.domain.budgets import JobPause
from firmsift.domain.model import Answer, DomainResult, Evidence, Job, QuoteStatus, ResultStatus, Source


# The columns a new job's domain row is written with; the others start NULL (or at their default).
PENDING_DOMAIN_COLUMNS = ("job_id", "position", "domain", "status", "reason", "evidence")


def pending_domain_values(job_id: str, domains: Iterable[str]) -> list[tuple[str, int, str, str, str, str]]:
    """The job_domains rows of a new job's domains, in PENDING_DOMAIN_COLUMNS order."""
    pending = ResultStatus.PENDING.value
    return [(job_id, i, d, pending, "", "[]") for i, d in enumerate(domains)]


def pending_domain_rows(job_id: str, domains: Iterable[str]) -> list[dict[str, Any]]:
    """The same rows as pending_domain_values, as column -> value mappings."""
    return [dict(zip(PENDING_DOMAIN_COLUMNS, values)) for values in pending_domain_values(job_id, domains)]


def batch_domains_text(job: Job) -> str:
    """A batch job's domains as its jobs.batch_domains column holds them (a normalized domain
    has no newline), written instead of its PENDING job_domains rows (migration 17)."""
    return "\n".join(job.domains)


def listed_domains(batch_domains: str) -> list[str]:
    return batch_domains.split("\n")


def epoch_time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def _evidence_json(evidence: Iterable[Evidence]) -> str:
    return json.dumps([{"url": e.url, "title": e.title, "snippet": e.snippet} for e in evidence])


def _evidence(raw: str) -> tuple[Evidence, ...]:
    return tuple(Evidence(url=e["url"], title=e.get("title", ""), snippet=e.get("snippet", "")) for e in json.loads(raw))


# The ShownResult fields whose column is stored otherwise than it is shown.
_ANSWER, _SOURCE, _EVIDENCE, _SEARCHED_AT, _REDIRECTED_ANSWER = (ShownResult._fields.index(name) for name in (
    "answer", "source", "evidence", "evidence_searched_at", "redirected_answer"))


def shown_evidence(raw: str) -> list[dict[str, str]]:
    """The evidence column as a result line shows it (its URLs and titles), parsed only when it holds any."""
    return [] if raw == "[]" else [{"url": e["url"], "title": e.get("title", "")} for e in json.loads(raw)]


def shown_result_from_row(row: Sequence[Any]) -> ShownResult:
    """A ShownResult from the job_domains columns named as its fields, in order (a batch's
    results read 100,000 of them: no DomainResult, no enum, no datetime in between)."""
    values = list(row)
    values[_ANSWER] = _optional_bool(values[_ANSWER])
    values[_SOURCE] = values[_SOURCE] or None
    values[_EVIDENCE] = shown_evidence(values[_EVIDENCE])
    if values[_SEARCHED_AT] is not None:
        values[_SEARCHED_AT] = epoch_time(values[_SEARCHED_AT]).isoformat()
    values[_REDIRECTED_ANSWER] = _optional_bool(values[_REDIRECTED_ANSWER])
    return ShownResult._make(values)


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
        llm_seconds=row["llm_seconds"], evidence_seconds=row["evidence_seconds"],
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
        "llm_seconds": answer.llm_seconds, "evidence_seconds": answer.evidence_seconds,
    }


def result_values(result: DomainResult) -> dict[str, Any]:
    """The job_domains columns of a finished result (finished_at aside). A DONE result also gets
    `shown`: its line's fields made from these very column values, as a read of them gives."""
    values = {
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
    done = result.status is ResultStatus.DONE
    values["shown"] = shown_members(shown_result_from_row([values[name] for name in ShownResult._fields])) if done else None
    return values


# The jobs columns of a pause (migration 11), all NULL while the job is not paused.
NO_PAUSE: dict[str, Any] = {"paused_scope": None, "paused_limit_usd": None, "paused_spent_usd": None,
                            "paused_at": None, "paused_resets_at": None, "paused_next_check_at": None}


def pause_values(pause: JobPause) -> dict[str, Any]:
    return {"paused_scope": pause.scope, "paused_limit_usd": pause.limit_usd, "paused_spent_usd": pause.spent_usd,
            "paused_at": pause.paused_at.timestamp(), "paused_resets_at": pause.resets_at.timestamp(),
            "paused_next_check_at": pause.next_check_at.timestamp()}


def job_pause(row: Any) -> JobPause | None:
    """The pause stored on a jobs row, or None."""
    if row["paused_at"] is None:
        return None
    return JobPause(row["paused_scope"], row["paused_limit_usd"], row["paused_spent_usd"], epoch_time(row["paused_at"]),
                    epoch_time(row["paused_resets_at"]), epoch_time(row["paused_next_check_at"]))


def job_row(job: Job) -> dict[str, Any]:
    created = job.created_at.timestamp()
    return {
        "id": job.id, "classifier": job.classifier, "status": job.status.value, "reply_queue": job.reply_queue,
        "created_at": created, "updated_at": created, "error": job.error, "reply_sent": False,
        "owner": job.owner, "idempotency_key": job.idempotency_key,
    }
