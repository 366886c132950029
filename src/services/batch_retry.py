"""Retrying a batch's failed rows: their domains asked again on the usual cheapest path (a human
answer, a known company, a fresh cached answer, then search and the LLM), their jobs queued again.
Nothing answered is asked again; cancelled and running jobs are left as they are."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from firmsift.domain.batches import Batch, BatchCancelledAlready
from firmsift.domain.work_messages import OutgoingMessage, job_message
from firmsift.ports.infrastructure_errors import QueuePartlySent, QueueUnavailable

if TYPE_CHECKING:
    from firmsift.ports.batches import BatchStore
    from firmsift.ports.queue import WorkQueue

NOT_QUEUED = "its retry could not be queued (the work queue refused it); retry the batch's failed rows again"


async def retry_failed_rows(batch: Batch, batches: BatchStore, queue: WorkQueue) -> int:
    """How many jobs were queued again. The messages carry new deduplication ids (the job id may
    still be in the queue's deduplication window). Jobs whose message may not have been sent are
    FAILED again before the error is raised, so a later retry finds them; one that landed all the
    same is then dropped by the worker (its job is finished)."""
    if batch.cancelled_at is not None:
        raise BatchCancelledAlready(batch.id)
    reopened = await batches.reopen_failed(batch.id)
    messages = [OutgoingMessage(job_message(job_id), group_id=job_id, dedup_id=f"{job_id}:retry:{uuid.uuid4().hex}")
                for job_id in reopened]
    try:
        await queue.send_many(messages)
    except QueuePartlySent as error:
        await batches.fail_unqueued(reopened[error.sent:], NOT_QUEUED)
        raise
    except QueueUnavailable:
        await batches.fail_unqueued(reopened, NOT_QUEUED)
        raise
    return len(reopened)
