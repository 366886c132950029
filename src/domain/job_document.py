"""The JSON document of a job: what GET /domains/classify/{id} returns and what a reply carries."""

from __future__ import annotations

import hashlib
from typing import Any

from firmsift.domain.budgets import pause_document
from firmsift.domain.model import DomainResult, Job
from firmsift.domain.spend import total_spend


def job_document(job: Job) -> dict[str, Any]:
    document: dict[str, Any] = {
        "job_id": job.id,
        "classifier": job.classifier,
        "status": job.status.value,
        "created_at": job.created_at.isoformat(),
        "results": [result_document(job.result_for(domain)) for domain in job.domains],
        "total": _total_document(job),
        # Why a PENDING job waits: the spend limit that paused it and until when (null: not paused).
        "paused": pause_document(job.pause) if job.pause is not None else None,
    }
    if job.error:
        document["error"] = job.error
    return document


def reply_dedup_id(job_id: str, body: str) -> str:
    """The deduplication id of a reply: the same document published twice (a repeated reply) is
    one message, while a later, different final state of the job (after `firmsift dlq redrive`)
    is a new one that a queue's 5-minute deduplication window must not swallow."""
    return f"{job_id}:{hashlib.sha256(body.encode()).hexdigest()[:32]}"


def warned(document: dict[str, Any], warning: str | None) -> dict[str, Any]:
    """`document` with a `warning` (why it may not progress, and the fix) when there is one."""
    return {**document, "warning": warning} if warning else document


def accepted_document(job: Job) -> dict[str, Any]:
    """The 202 body of a submitted job."""
    return {"job_id": job.id, "status": job.status.value, "classifier": job.classifier, "domains": list(job.domains)}


def result_document(result: DomainResult) -> dict[str, Any]:
    """One domain's result as a job document shows it (a batch's result lines show the same)."""
    return {
        "domain": result.domain,
        "status": result.status.value,
        "answer": result.answer,
        "confidence": result.confidence,
        "reason": result.reason,
        "source": result.source.value if result.source else None,
        "evidence": [{"url": e.url, "title": e.title} for e in result.evidence],
        "evidence_status": result.evidence_status,
        "search_provider": result.search_provider,
        "evidence_reused_from": result.evidence_reused_from,
        "evidence_searched_at": result.evidence_searched_at.isoformat() if result.evidence_searched_at else None,
        "quote": result.quote,
        "quote_status": result.quote_status.value if result.quote_status else None,
        "site_status": result.site_status,
        "redirected_to": result.redirected_to,
        "redirected_answer": result.redirected_answer,
        "error": result.error,
        # What this job spent on the domain (0 for an answer it reused) ...
        "tokens_in": result.tokens_in,
        "tokens_out": result.tokens_out,
        "cost_usd": result.cost_usd,
        # ... and what the answer's own LLM call cost when it was made.
        "answer_tokens_in": result.answer_tokens_in,
        "answer_tokens_out": result.answer_tokens_out,
        "answer_cost_usd": result.answer_cost_usd,
    }


def _total_document(job: Job) -> dict[str, Any]:
    spend = total_spend(job.result_for(domain) for domain in job.domains)
    return {"tokens_in": spend.tokens_in, "tokens_out": spend.tokens_out, "cost_usd": spend.cost_usd,
            "cost_unknown_domains": spend.cost_unknown_domains}
