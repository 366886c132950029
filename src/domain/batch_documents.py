"""The JSON documents of a batch: the 202 answer to POST /batches and its progress (GET /batches/{id},
and the one reply a batch sends when it ends)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from firmsift.domain.batches import Batch, BatchCounts, BatchRow, BatchStatus
from firmsift.domain.budgets import batch_pause_document


REJECTED_LISTED = 1000  # rejected rows a 202 lists (the results list every row); a body stays bounded


def accepted_batch_document(batch: Batch, rejected: list[BatchRow]) -> dict[str, Any]:
    """The 202 body: counts, and the first REJECTED_LISTED rejected rows with where each stood and why."""
    return {
        "batch_id": batch.id,
        "classifier": batch.classifier,
        "mode": batch.mode.value,
        "total": batch.total,
        "accepted": batch.accepted,
        "duplicates": batch.duplicates,
        "rejected": [_rejected(row) for row in rejected[:REJECTED_LISTED]],
        "rejected_total": batch.rejected,
    }


def batch_status(batch: Batch, counts: BatchCounts) -> BatchStatus:
    """CANCELLED once deleted; else DONE when no domain is left pending."""
    if batch.cancelled_at is not None:
        return BatchStatus.CANCELLED
    return BatchStatus.RUNNING if counts.pending else BatchStatus.DONE


def finished_at(batch: Batch, counts: BatchCounts) -> datetime | None:
    """When the last domain finished (or the batch was cancelled, if later); None while any runs."""
    if counts.pending:
        return None
    moments = [m for m in (counts.last_finished_at, batch.cancelled_at) if m is not None]
    return max(moments) if moments else batch.created_at


def estimated_finish(batch: Batch, counts: BatchCounts, now: datetime) -> datetime | None:
    """When the pending domains should be done at the rate seen since the batch was created;
    None before any domain has finished (no rate yet) and once none is pending."""
    elapsed = (now - batch.created_at).total_seconds()
    if not counts.pending or not counts.finished or elapsed <= 0:
        return None
    return now + timedelta(seconds=counts.pending * elapsed / counts.finished)


def progress_document(batch: Batch, counts: BatchCounts, now: datetime) -> dict[str, Any]:
    """Progress over the batch's unique domains: total = done + failed + pending + cancelled."""
    ended = finished_at(batch, counts)
    estimate = estimated_finish(batch, counts, now)
    return {
        "batch_id": batch.id,
        "classifier": batch.classifier,
        "mode": batch.mode.value,
        "status": batch_status(batch, counts).value,
        "total": batch.accepted,
        "done": counts.done,
        "failed": counts.failed,
        "pending": counts.pending,
        "cancelled": counts.cancelled,
        "by_source": dict(sorted(counts.by_source.items())),
        "rows": batch.total,
        "duplicates": batch.duplicates,
        "rejected": batch.rejected,
        "created_at": batch.created_at.isoformat(),
        "finished_at": ended.isoformat() if ended else None,
        "estimated_finish_at": estimate.isoformat() if estimate else None,
        # What the batch's finished domains spent on the LLM, as a job's "total" says it.
        "spend": {"tokens_in": counts.spend.tokens_in, "tokens_out": counts.spend.tokens_out,
                  "cost_usd": counts.spend.cost_usd, "cost_unknown_domains": counts.spend.cost_unknown_domains},
        # Jobs of the batch a spend limit paused: which limit, until when, how many (null: none).
        "paused": batch_pause_document(counts.pause) if counts.pause is not None else None,
    }


def _rejected(row: BatchRow) -> dict[str, Any]:
    document: dict[str, Any] = {"index": row.position, "reason": row.rejection}
    if row.line is not None:
        document["line"] = row.line
    return document
