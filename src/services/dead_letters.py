"""Use-cases for dead-lettered jobs: mark them FAILED so callers learn, retry them on request."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from firmsift.domain.model import UNFINISHED_STATUSES, Job, JobStatus
from firmsift.ports.infrastructure_errors import QueuePartlySent
from firmsift.domain.work_messages import OutgoingMessage, job_id_in, job_message

if TYPE_CHECKING:
    from firmsift.ports.queue import QueueMessage, WorkQueue
    from firmsift.ports.repository import JobRepository

DEAD_LETTER_ERROR = "gave up after repeated failed deliveries (dead-lettered); retry with `firmsift dlq redrive`"


def job_id_of(message: QueueMessage) -> str | None:
    """The job id a work-queue message carries, or None for a malformed one."""
    return job_id_in(message.body)


async def fail_dead_lettered(messages: Iterable[QueueMessage], jobs: JobRepository) -> list[Job]:
    """Mark the unfinished jobs of these dead letters FAILED; returns the jobs that changed."""
    changed: list[Job] = []
    for message in messages:
        job_id = job_id_of(message)
        job = await jobs.get_job(job_id) if job_id else None
        if job is None or job.status.finished:
            continue
        # Only an unfinished job: one that a (late) delivery finished since we looked keeps the
        # state its caller was told. After this write no delivery changes the job (see save_result).
        if not await jobs.set_job_status(job.id, JobStatus.FAILED, error=DEAD_LETTER_ERROR,
                                         only_from=UNFINISHED_STATUSES):
            continue
        updated = await jobs.get_job(job.id)
        if updated is not None:
            changed.append(updated)
    return changed


async def redrive_dead_lettered(jobs: JobRepository, queue: WorkQueue, *, limit: int) -> list[str]:
    """Retry up to `limit` jobs that were failed for being dead-lettered: back to PENDING (their
    answered domains are kept and skipped), a fresh reply for the caller, and a new message, the
    messages sent together (SQS: ten a call).

    The dedup id is new: the job id may still be inside the queue's 5-minute deduplication
    window, which would silently drop the retry. Jobs whose message may not have been sent go back
    to FAILED before QueuePartlySent is raised, so the next redrive finds them; one whose message
    landed all the same is then dropped by the worker (its job is finished)."""
    retried: list[str] = []
    for job in await jobs.list_failed_jobs(error=DEAD_LETTER_ERROR, limit=limit):
        if not await jobs.set_job_status(job.id, JobStatus.PENDING, only_from=(JobStatus.FAILED,)):
            continue  # another redrive took it
        # The FAILED reply went out; the caller gets another one with the final result.
        await jobs.record_reply(job.id, sent=False, error=None)
        retried.append(job.id)
    try:
        await queue.send_many([OutgoingMessage(job_message(job_id), group_id=job_id,
                                               dedup_id=f"{job_id}:redrive:{uuid.uuid4().hex}") for job_id in retried])
    except QueuePartlySent as error:
        for job_id in retried[error.sent:]:
            await jobs.set_job_status(job_id, JobStatus.FAILED, error=DEAD_LETTER_ERROR, only_from=(JobStatus.PENDING,))
        raise
    return retried
