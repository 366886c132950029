"""Telling a finished job's caller: its reply on the caller's queue (once), then whatever else
follows a finished job (its batch's one reply once the batch has ended)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from firmsift.domain.job_document import job_document, reply_dedup_id
from firmsift.domain.outside_text import storable_error
from firmsift.ports.infrastructure_errors import QueueUnavailable

if TYPE_CHECKING:
    from firmsift.domain.model import Job
    from firmsift.ports.queue import ReplyPublisher
    from firmsift.ports.repository import JobRepository

log = logging.getLogger(__name__)


async def reply_to_job(job: Job, replies: ReplyPublisher, jobs: JobRepository) -> None:
    """Publish the job's document on its reply queue, once it is final and not yet sent; a queue
    outage is recorded on the job (reply_error), not raised."""
    # Only a final state: a stale delivery ending after its job was redriven (PENDING again)
    # leaves the reply to the new delivery.
    if job.reply_queue is None or job.reply_sent or not job.status.finished:
        return
    try:
        body = json.dumps(job_document(job))
        await replies.publish(job.reply_queue, body, group_id=job.id, dedup_id=reply_dedup_id(job.id, body))
    except QueueUnavailable as error:
        log.error("reply could not be published", extra={"job_id": job.id, "error": storable_error(error)})
        await jobs.record_reply(job.id, sent=False, error=storable_error(error))
        return
    await jobs.record_reply(job.id, sent=True, error=None)


class FinishedJobs:
    """What follows a job that a provider batch finished, as the worker does for the jobs it
    finishes: its reply, then `after_job` (the batch's reply once its last job has ended)."""

    def __init__(self, replies: ReplyPublisher, jobs: JobRepository,
                 after_job: Callable[[Job], Awaitable[None]]) -> None:
        self.replies = replies
        self.jobs = jobs
        self.after_job = after_job

    async def tell(self, job: Job) -> None:
        await reply_to_job(job, self.replies, self.jobs)
        if job.status.finished:
            await self.after_job(job)
