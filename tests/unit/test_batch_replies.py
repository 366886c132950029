"""A batch replies once, when its last domain is finished: not per job, not again on redelivery,
and again only after a failed publish."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timezone

import pytest

from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.queue import InMemoryReplyPublisher
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.batches import Batch, BatchPlan, InputRow
from firmsift.domain.model import DomainResult, Job, JobStatus, ResultStatus, Source
from firmsift.domain.normalize import normalize_domain
from firmsift.ports.infrastructure_errors import QueueUnavailable
from firmsift.services.batches import BatchReplies, cancel_batch

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


async def recorded(reply_queue: str | None = "team") -> tuple[InMemoryBatches, InMemoryReplyPublisher, BatchReplies]:
    batches = InMemoryBatches(InMemoryStore())
    ids = (f"job{i}" for i in itertools.count())
    rows = (InputRow(i, None, json.dumps(d), d) for i, d in enumerate(["a.com", "b.com", "c.com"]))
    await batches.record(BatchPlan(Batch(id="b1", classifier="cpg", created_at=NOW, reply_queue=reply_queue), rows,
                                   read_domain=normalize_domain, job_size=2, max_domains=10,
                                   new_job_id=lambda: next(ids)))
    published = InMemoryReplyPublisher()
    return batches, published, BatchReplies(batches, published, now=lambda: NOW)


async def finish(batches: InMemoryBatches, job_id: str) -> None:
    job = batches.store.jobs[job_id]
    for domain in job.domains:
        await batches.store.save_result(job_id, DomainResult(domain, ResultStatus.DONE, True, 5, source=Source.CACHE), None)
    await batches.store.set_job_status(job_id, JobStatus.DONE)


async def test_the_reply_is_published_once_when_the_last_job_ends() -> None:
    batches, published, replies = await recorded()
    await finish(batches, "job0")
    await replies.after_job(batches.store.jobs["job0"])
    assert published.published == []  # job1 is still pending
    await finish(batches, "job1")
    await replies.after_job(batches.store.jobs["job1"])
    await replies.after_job(batches.store.jobs["job1"])  # a redelivered message of the last job
    [reply] = published.published
    assert (reply.queue, reply.group_id, reply.dedup_id) == ("team", "b1", "b1")
    assert json.loads(reply.body)["status"] == "DONE" and json.loads(reply.body)["done"] == 3


async def test_a_failed_publish_raises_and_is_tried_again() -> None:
    batches, published, replies = await recorded()
    await finish(batches, "job0")
    await finish(batches, "job1")
    published.fail_next_publish(QueueUnavailable("down"))
    with pytest.raises(QueueUnavailable):
        await replies.after_job(batches.store.jobs["job1"])
    await replies.after_job(batches.store.jobs["job1"])
    assert len(published.published) == 1


async def test_a_cancelled_batch_with_nothing_running_replies_at_once() -> None:
    batches, published, replies = await recorded()
    assert await cancel_batch((await batches.get_batch("b1")), batches, replies) == 2
    [reply] = published.published
    assert json.loads(reply.body)["status"] == "CANCELLED" and json.loads(reply.body)["cancelled"] == 3


async def test_no_reply_without_a_reply_queue_or_for_a_job_outside_batches() -> None:
    batches, published, replies = await recorded(reply_queue=None)
    await finish(batches, "job0")
    await finish(batches, "job1")
    await replies.after_job(batches.store.jobs["job1"])
    await batches.store.create_job(Job(id="solo", classifier="cpg", status=JobStatus.DONE, created_at=NOW,
                                       domains=("x.com",), reply_queue="team"))
    await replies.after_job(batches.store.jobs["solo"])
    assert published.published == []
