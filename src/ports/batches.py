"""Batch ports: the store of batches (their rows, progress and results) and the batch intake."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from firmsift.domain.batch_results import RowResult
from firmsift.domain.batches import Batch, BatchCounts, BatchPlan, BatchRow


class BatchStore(Protocol):
    async def record(self, plan: BatchPlan) -> Batch:
        """Store the plan's batch, its jobs (every one PENDING, with its domains) and its rows,
        chunk by chunk as the plan yields them, all in one transaction; returns the batch with
        its counts. Nothing is stored when the plan raises, or when the owner already used the
        batch's Idempotency-Key (then BatchKeyTaken with the earlier batch)."""

    async def get_batch(self, batch_id: str) -> Batch | None: ...

    async def owned_batches(self, owner: str, limit: int) -> list[Batch]:
        """The owner's `limit` newest batches, newest first (the web app's list)."""

    async def rejected_rows(self, batch_id: str, limit: int) -> list[BatchRow]:
        """The batch's first `limit` rejected rows, in input order."""

    async def widest_row(self, batch_id: str) -> int:
        """The length, in characters, of the batch's longest stored row (its `original`); 0 for none."""

    async def counts(self, batch_id: str) -> BatchCounts:
        """Where the batch's unique domains stand (see batches.domain_state)."""

    async def has_unfinished_jobs(self, batch_id: str) -> bool:
        """Whether any of the batch's jobs is still PENDING or RUNNING (cheap: stops at the first)."""

    async def result_page(self, batch_id: str, *, after: int, limit: int) -> list[RowResult]:
        """Up to `limit` rows with their results, from position `after` + 1 on, in input order."""

    async def cancel(self, batch_id: str, at: datetime) -> int:
        """Mark the batch cancelled and fail (BATCH_CANCELLED) each of its jobs still PENDING, by
        compare-and-set, so a job a worker has started runs on (standard mode). In economy mode
        also fail each RUNNING job: one waiting for the provider's batch API
        (BATCH_CANCELLED_WAITING) stops waiting, and a question it waited for that no other job
        waits for and that has not gone out is forgotten, never paid for; one a worker is running
        (BATCH_CANCELLED_RUNNING) keeps the domains it answered so far, and its questions are
        refused from now on (DeferredQuestions.defer). Returns how many jobs were cancelled."""

    async def reopen_failed(self, batch_id: str) -> list[str]:
        """Make the batch's failed domains whose calls were not billed pending again, and their jobs
        (finished, not cancelled) PENDING, the batch's reply unsent; the jobs reopened, to queue
        again. Answered domains stay answered, a billed failure keeps its spend on record, cancelled
        and running jobs are left as they are. BatchCancelledAlready when the batch was cancelled."""

    async def fail_unqueued(self, job_ids: list[str], error: str) -> None:
        """The reopened jobs whose messages could not be sent: FAILED again with `error`, so a
        later retry finds them."""

    async def batch_of_job(self, job_id: str) -> Batch | None:
        """The batch a job was created for, or None for a job of POST /domains/classify."""

    async def record_reply(self, batch_id: str) -> None:
        """Note that the batch's reply was published."""


class BatchIntake(Protocol):
    async def accept(self, plan: BatchPlan) -> Batch:
        """Record the batch (BatchStore.record) and publish {"job_id": ...} for each of its jobs
        (group and dedup id = job id). QueueUnavailable when that cannot be done durably; jobs
        whose message could not be published are then never left PENDING."""
