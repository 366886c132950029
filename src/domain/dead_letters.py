"""Use-cases for dead-lettered jobs: mark them FAILED so callers learn, reopen them on redrive."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from firmsift.domain.model import Job, JobStatus

if TYPE_CHECKING:
    from firmsift.ports.queue import QueueMessage
    from firmsift.ports.repository import JobRepository

DEAD_LETTER_ERROR = "gave up after repeated failed deliveries; the message is in the dead-letter queue"


def job_id_of(message: QueueMessage) -> str | None:
    """The job id a work-queue message carries, or None for a malformed one."""
    try:
        document = json.loads(message.body)
    except (ValueError, RecursionError):
        return None
    job_id = document.get("job_id") if isinstance(document, dict) else None
    return job_id if isinstance(job_id, str) and job_id else None


async def fail_dead_lettered(messages: Iterable[QueueMessage], jobs: JobRepository) -> list[Job]:
    """Mark the unfinished jobs of these dead letters FAILED; returns the jobs that changed."""
    changed: list[Job] = []
    for message in messages:
        job_id = job_id_of(message)
        job = await jobs.get_job(job_id) if job_id else None
        if job is None or job.status in (JobStatus.DONE, JobStatus.FAILED):
            continue
        await jobs.set_job_status(job.id, JobStatus.FAILED, error=DEAD_LETTER_ERROR)
        updated = await jobs.get_job(job.id)
        if updated is not None:
            changed.append(updated)
    return changed


async def reopen_redriven(messages: Iterable[QueueMessage], jobs: JobRepository) -> list[str]:
    """Jobs failed by dead-lettering go back to PENDING when their message is redriven, so the
    worker processes them again (their finished domains are kept and skipped)."""
    reopened: list[str] = []
    for message in messages:
        job_id = job_id_of(message)
        job = await jobs.get_job(job_id) if job_id else None
        if job is not None and job.status is JobStatus.FAILED and job.error == DEAD_LETTER_ERROR:
            await jobs.set_job_status(job.id, JobStatus.PENDING)
            # The FAILED reply went out; the caller gets another one with the final result.
            await jobs.record_reply(job.id, sent=False, error=None)
            reopened.append(job.id)
    return reopened
