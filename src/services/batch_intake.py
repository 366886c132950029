"""The batch use-case: check a batch request, plan its rows into jobs, record and publish them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.batch_documents import REJECTED_LISTED
from firmsift.domain.batches import Batch, BatchKeyTaken, BatchPlan, BatchRow, InputRow
from firmsift.domain.clock import utc_now
from firmsift.domain.economy import BatchMode, batch_mode
from firmsift.domain.errors import UnknownClassifier
from firmsift.domain.idempotency import IdempotencyKeyReused, check_idempotency_key
from firmsift.domain.keys import ANONYMOUS, Caller
from firmsift.domain.model import Classifier, JobStatus
from firmsift.domain.reply_queues import check_reply_queue, check_reply_queue_allowed
from firmsift.domain.work_messages import OutgoingMessage, job_message
from firmsift.ports.infrastructure_errors import QueuePartlySent, QueueUnavailable
from firmsift.services.submit import new_job_id

if TYPE_CHECKING:
    from firmsift.ports.batches import BatchIntake, BatchStore
    from firmsift.ports.queue import WorkQueue
    from firmsift.ports.repository import JobRepository

log = logging.getLogger(__name__)
NOT_QUEUED = "could not be queued; try again"


@dataclass(frozen=True)
class SubmitBatch:
    """A batch request: `rows` are read lazily (while the store writes), `read_domain` takes a
    row's value to its domain or raises DomainRejected; `request_hash` identifies the request
    for its Idempotency-Key; `columns` is a CSV upload's header (None for a JSON list)."""

    classifier: object
    rows: Iterable[InputRow]
    read_domain: Callable[[object], str]
    request_hash: str
    columns: tuple[str, ...] | None = None
    reply_queue: str | None = None
    caller: Caller = ANONYMOUS
    idempotency_key: str | None = None
    mode: object = BatchMode.STANDARD.value  # as the caller named it (economy.batch_mode reads it)


@dataclass(frozen=True)
class BatchSubmission:
    """The batch a request stands for, its first rejected rows (REJECTED_LISTED), and whether it is an earlier batch
    returned again for a repeated Idempotency-Key."""

    batch: Batch
    rejected: list[BatchRow]
    replayed: bool = False


def check_batch_request(command: SubmitBatch, catalog: Mapping[str, Classifier]) -> Classifier:
    """The classifier, once the headers are known good: all that can be refused before the body is read."""
    check_reply_queue_allowed(check_reply_queue(command.reply_queue), command.caller.reply_queues)
    check_idempotency_key(command.idempotency_key)
    batch_mode(command.mode)
    if not isinstance(command.classifier, str) or command.classifier not in catalog:
        raise UnknownClassifier(str(command.classifier), tuple(sorted(catalog)))
    return catalog[command.classifier]


async def submit_batch(command: SubmitBatch, *, catalog: Mapping[str, Classifier], intake: BatchIntake,
                       batches: BatchStore, job_size: int, max_domains: int,
                       new_id: Callable[[], str] = new_job_id, now: Callable[[], datetime] = utc_now) -> BatchSubmission:
    """Plan the rows into jobs of `job_size` and hand them to the intake. A repeated Idempotency-Key
    of the same caller returns the batch the first request made (IdempotencyKeyReused when the
    request differs)."""
    classifier = check_batch_request(command, catalog)
    batch = Batch(id=new_id(), classifier=classifier.name, created_at=now(), owner=command.caller.owner,
                  reply_queue=check_reply_queue(command.reply_queue), idempotency_key=command.idempotency_key,
                  request_hash=command.request_hash, columns=command.columns, mode=batch_mode(command.mode))
    plan = BatchPlan(batch, command.rows, read_domain=command.read_domain, job_size=job_size,
                     max_domains=max_domains, new_job_id=new_id)
    try:
        accepted = await intake.accept(plan)
    except BatchKeyTaken as taken:
        if taken.existing.request_hash != command.request_hash:
            raise IdempotencyKeyReused(command.idempotency_key or "", taken.existing.id) from None
        return BatchSubmission(taken.existing, await batches.rejected_rows(taken.existing.id, REJECTED_LISTED),
                               replayed=True)
    return BatchSubmission(accepted, await batches.rejected_rows(accepted.id, REJECTED_LISTED))


class RecordBatchThenPublish:
    """The batch intake for a queue outside the database (SQS, or the in-memory one): record the
    batch first, so no message points at a missing job, then publish each job. Jobs whose message
    could not be published are marked FAILED (NOT_QUEUED) and QueueUnavailable is raised: the
    caller gets a 503, and no job waits forever for a message that does not exist."""

    def __init__(self, batches: BatchStore, jobs: JobRepository, queue: WorkQueue) -> None:
        self.batches = batches
        self.jobs = jobs
        self.queue = queue

    async def accept(self, plan: BatchPlan) -> Batch:
        batch = await self.batches.record(plan)
        messages = [OutgoingMessage(job_message(job_id), group_id=job_id, dedup_id=job_id) for job_id in plan.job_ids]
        try:
            await self.queue.send_many(messages)  # SQS: ten a call
        except QueuePartlySent as stopped:
            await asyncio.shield(self._give_up(batch, plan.job_ids[stopped.sent:]))
            raise
        except (QueueUnavailable, asyncio.CancelledError):
            await asyncio.shield(self._give_up(batch, plan.job_ids))
            raise
        return batch

    async def _give_up(self, batch: Batch, unpublished: list[str]) -> None:
        log.error("batch jobs could not be queued", extra={"batch_id": batch.id, "jobs": len(unpublished)})
        for job_id in unpublished:
            await self.jobs.set_job_status(job_id, JobStatus.FAILED, error=NOT_QUEUED, only_from=(JobStatus.PENDING,))
