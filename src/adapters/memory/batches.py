"""In-memory batch store: batches and their rows in lists, their jobs in an InMemoryStore."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime

from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.batch_results import RowResult, shown_result
from firmsift.domain.batches import (
    BATCH_CANCELLED,
    BATCH_CANCELLED_RUNNING,
    Batch,
    BatchCancelledAlready,
    BatchCounts,
    BatchKeyTaken,
    BatchPlan,
    BatchRow,
    domain_state,
)
from firmsift.domain.budgets import BatchPause
from firmsift.domain.economy import BatchMode
from firmsift.domain.model import DomainResult, Job, JobStatus, ResultStatus
from firmsift.domain.spend import total_spend


class InMemoryBatches:
    """Implements BatchStore over the jobs of an InMemoryStore. A plan that raises leaves nothing
    behind, as the SQL store's transaction does."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store
        self.batches: dict[str, Batch] = {}
        self.rows: dict[str, list[BatchRow]] = {}
        self.job_batch: dict[str, str] = {}
        # Called by cancel with the batch's job ids; returns the jobs it failed (economy mode's
        # waiting jobs: an InMemoryDeferredQuestions over this store adds itself).
        self.withdrawals: list[Callable[[list[str]], Awaitable[int]]] = []

    async def record(self, plan: BatchPlan) -> Batch:
        batch = plan.batch()
        for earlier in self.batches.values():
            if batch.idempotency_key is not None and (earlier.owner, earlier.idempotency_key) == (
                    batch.owner, batch.idempotency_key):
                raise BatchKeyTaken(earlier)
        chunks = list(plan.chunks())  # read whole first: a plan that raises writes nothing
        for chunk in chunks:
            for job in chunk.jobs:
                await self.store.create_job(job)
                self.job_batch[job.id] = batch.id
        counted = plan.batch()
        self.batches[batch.id] = counted
        self.rows[batch.id] = [row for chunk in chunks for row in chunk.rows]
        return counted

    async def get_batch(self, batch_id: str) -> Batch | None:
        return self.batches.get(batch_id)

    async def owned_batches(self, owner: str, limit: int) -> list[Batch]:
        owned = [batch for batch in self.batches.values() if batch.owner == owner]
        return sorted(owned, key=lambda batch: batch.created_at, reverse=True)[:limit]

    async def rejected_rows(self, batch_id: str, limit: int) -> list[BatchRow]:
        return [row for row in self.rows.get(batch_id, []) if row.rejection is not None][:limit]

    async def widest_row(self, batch_id: str) -> int:
        return max((len(row.original) for row in self.rows.get(batch_id, [])), default=0)

    async def counts(self, batch_id: str) -> BatchCounts:
        tally = {"DONE": 0, "FAILED": 0, "PENDING": 0, "CANCELLED": 0}
        by_source: dict[str, int] = {}
        for job in self._jobs(batch_id):
            for result in job.results:
                state = domain_state(result.status.value, job.status, job.error)
                tally[state] += 1
                if result.source is not None and state in ("DONE", "FAILED"):
                    by_source[result.source.value] = by_source.get(result.source.value, 0) + 1
        return BatchCounts(done=tally["DONE"], failed=tally["FAILED"], pending=tally["PENDING"],
                           cancelled=tally["CANCELLED"], by_source=by_source,
                           spend=total_spend(result for job in self._jobs(batch_id) for result in job.results),
                           pause=self._pause(batch_id))

    async def has_unfinished_jobs(self, batch_id: str) -> bool:
        return any(not job.status.finished for job in self._jobs(batch_id))

    async def result_page(self, batch_id: str, *, after: int, limit: int) -> list[RowResult]:
        page = [row for row in self.rows.get(batch_id, []) if row.position > after][:limit]
        return [self._result(row) for row in page]

    async def cancel(self, batch_id: str, at: datetime) -> int:
        batch = self.batches[batch_id]
        if batch.cancelled_at is None:
            self.batches[batch_id] = replace(batch, cancelled_at=at)
        job_ids = [job.id for job in self._jobs(batch_id)]
        cancelled = 0
        for job_id in job_ids:
            if await self.store.set_job_status(job_id, JobStatus.FAILED, BATCH_CANCELLED, only_from=(JobStatus.PENDING,)):
                cancelled += 1
        for withdraw in self.withdrawals:
            cancelled += await withdraw(job_ids)
        if batch.mode is BatchMode.ECONOMY:  # as SqlBatches.cancel: a running job's questions are refused from now on
            for job_id in job_ids:
                if await self.store.set_job_status(job_id, JobStatus.FAILED, BATCH_CANCELLED_RUNNING,
                                                   only_from=(JobStatus.RUNNING,)):
                    cancelled += 1
        return cancelled

    async def reopen_failed(self, batch_id: str) -> list[str]:
        if self.batches[batch_id].cancelled_at is not None:
            raise BatchCancelledAlready(batch_id)
        reopened = []
        for job in self._jobs(batch_id):
            failed_domain = any(_unbilled_failure(result) for result in job.results)
            failed_whole = job.status is JobStatus.FAILED and job.error != BATCH_CANCELLED
            if job.status.finished and (failed_domain or failed_whole):
                self.store.jobs[job.id] = replace(
                    job, status=JobStatus.PENDING, error=None, reply_sent=False, reply_error=None, pause=None,
                    results=tuple(DomainResult(domain=r.domain) if _unbilled_failure(r) else r for r in job.results))
                reopened.append(job.id)
        if reopened:
            self.batches[batch_id] = replace(self.batches[batch_id], reply_sent=False)
        return sorted(reopened)

    async def fail_unqueued(self, job_ids: list[str], error: str) -> None:
        for job_id in job_ids:
            await self.store.set_job_status(job_id, JobStatus.FAILED, error, only_from=(JobStatus.PENDING,))

    async def batch_of_job(self, job_id: str) -> Batch | None:
        batch_id = self.job_batch.get(job_id)
        return None if batch_id is None else self.batches.get(batch_id)

    async def record_reply(self, batch_id: str) -> None:
        self.batches[batch_id] = replace(self.batches[batch_id], reply_sent=True)

    def _pause(self, batch_id: str) -> BatchPause | None:
        paused = [job.pause for job in self._jobs(batch_id) if job.status is JobStatus.PENDING and job.pause]
        return BatchPause(max(paused, key=lambda p: p.paused_at), len(paused)) if paused else None

    def _jobs(self, batch_id: str) -> list[Job]:
        return [self.store.jobs[job_id] for job_id, owner in self.job_batch.items() if owner == batch_id]

    def _result(self, row: BatchRow) -> RowResult:
        if row.job_id is None or row.domain is None:
            return RowResult(row)
        job = self.store.jobs[row.job_id]
        result = job.result_for(row.domain)
        return RowResult(row, domain_state(result.status.value, job.status, job.error), shown_result(result), job.error)


def _unbilled_failure(result: DomainResult) -> bool:
    """A failed domain whose call was not billed: retried (a billed one keeps its spend on record)."""
    return (result.status is ResultStatus.FAILED and result.tokens_in is None and result.tokens_out is None
            and result.cost_usd is None)
