"""The JSON document of a job: what GET /domains/classify/{id} returns and what a reply carries."""

from __future__ import annotations

import hashlib
from typing import Any

from firmsift.domain.model import DomainResult, Job


def job_document(job: Job) -> dict[str, Any]:
    document: dict[str, Any] = {
        "job_id": job.id,
        "classifier": job.classifier,
        "status": job.status.value,
        "created_at": job.created_at.isoformat(),
        "results": [_result_document(job.result_for(domain)) for domain in job.domains],
    }
    if job.error:
        document["error"] = job.error
    return document


def reply_dedup_id(job_id: str, body: str) -> str:
    """The deduplication id of a reply: the same document published twice (a repeated reply) is
    one message, while a later, different final state of the job (after `firmsift dlq redrive`)
    is a new one that a queue's 5-minute deduplication window must not swallow."""
    return f"{job_id}:{hashlib.sha256(body.encode()).hexdigest()[:32]}"


def accepted_document(job: Job) -> dict[str, Any]:
    """The 202 body of a submitted job."""
    return {"job_id": job.id, "status": job.status.value, "classifier": job.classifier, "domains": list(job.domains)}


def _result_document(result: DomainResult) -> dict[str, Any]:
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
        "quote": result.quote,
        "quote_status": result.quote_status.value if result.quote_status else None,
        "site_status": result.site_status,
        "redirected_to": result.redirected_to,
        "redirected_answer": result.redirected_answer,
        "error": result.error,
    }
