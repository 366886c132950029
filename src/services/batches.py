"""Batch use-cases after intake: find a caller's batch, page through its results, cancel it, and
send its one reply when it ends."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.batch_documents import progress_document
from firmsift.domain.batch_results import RowResult, rows_per_page
from firmsift.domain.batches import Batch, BatchNotFound
from firmsift.domain.clock import utc_now
from firmsift.domain.errors import JobNotFound
from firmsift.domain.model import Job
from firmsift.services.submit import parse_job_id

if TYPE_CHECKING:
    from firmsift.ports.batches import BatchStore
    from firmsift.ports.queue import ReplyPublisher

log = logging.getLogger(__name__)
RESULT_PAGE_ROWS = 5000  # rows read and written per step: fewer, larger queries and writes


async def find_batch(batch_id: str, owner: str, batches: BatchStore) -> Batch:
    """The caller's batch, or BatchNotFound: another owner's batch is not found either."""
    try:
        canonical = parse_job_id(batch_id)
    except JobNotFound:
        raise BatchNotFound(batch_id) from None
    batch = await batches.get_batch(canonical)
    if batch is None or batch.owner != owner:
        raise BatchNotFound(batch_id)
    return batch


async def result_pages(batch: Batch, batches: BatchStore, page_rows: int = RESULT_PAGE_ROWS,
                       start: int = 0) -> AsyncIterator[list[RowResult]]:
    """The batch's rows from index `start` with their results, in input order, one page from the
    store at a time: of `page_rows` rows, fewer where the batch's rows are wide (rows_per_page)."""
    page_rows = rows_per_page(batch, await batches.widest_row(batch.id), page_rows)
    after = start - 1
    while page := await batches.result_page(batch.id, after=after, limit=page_rows):
        yield page
        after = page[-1].row.position


async def cancel_batch(batch: Batch, batches: BatchStore, replies: BatchReplies,
                       now: Callable[[], datetime] = utc_now) -> int:
    """Cancel the batch's jobs that have not started (work started or finished is kept); returns
    how many jobs were cancelled. A batch that has ended is left as it is. If nothing is left
    running after the cancel, the batch has ended: reply now."""
    if not await batches.has_unfinished_jobs(batch.id):
        return 0
    cancelled = await batches.cancel(batch.id, now())
    await replies.reply_if_ended(batch.id)
    return cancelled


class BatchReplies:
    """Publishes a batch's one reply (its progress document) when its last domain finishes. Called
    after each finished job (and after a cancel): a reply is published only when nothing of the
    batch is pending and none was recorded as sent. Two jobs ending at once may both publish; the
    deduplication id (the batch id) makes that one message on a queue that deduplicates."""

    def __init__(self, batches: BatchStore, replies: ReplyPublisher, now: Callable[[], datetime] = utc_now) -> None:
        self.batches = batches
        self.replies = replies
        self.now = now

    async def after_job(self, job: Job) -> None:
        """The worker's hook for a finished job: reply for its batch if that batch has ended.
        A failure raises, so the job's message is redelivered and the reply tried again."""
        batch = await self.batches.batch_of_job(job.id)
        if batch is not None:
            await self._reply(batch)

    async def reply_if_ended(self, batch_id: str) -> None:
        batch = await self.batches.get_batch(batch_id)
        if batch is not None:
            await self._reply(batch)

    async def _reply(self, batch: Batch) -> None:
        # After each of a batch's jobs: the cheap check first, the counts only once it has ended.
        if batch.reply_queue is None or batch.reply_sent or await self.batches.has_unfinished_jobs(batch.id):
            return
        counts = await self.batches.counts(batch.id)
        body = json.dumps(progress_document(batch, counts, self.now()))
        await self.replies.publish(batch.reply_queue, body, group_id=batch.id, dedup_id=batch.id)
        await self.batches.record_reply(batch.id)
        log.info("batch replied", extra={"batch_id": batch.id})
