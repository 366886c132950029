"""Submitting a batch on the in-memory adapters: a publish that fails leaves no job waiting for a
message that does not exist, and the caller is told to retry."""

from __future__ import annotations

import itertools
import json

import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.batches import InputRow
from firmsift.domain.model import JobStatus
from firmsift.domain.normalize import normalize_domain
from firmsift.ports.infrastructure_errors import QueuePartlySent, QueueUnavailable
from firmsift.services.batch_intake import NOT_QUEUED, RecordBatchThenPublish, SubmitBatch, submit_batch

pytestmark = pytest.mark.anyio


def command(domains: list[str]) -> SubmitBatch:
    rows = [InputRow(i, None, json.dumps(d), d) for i, d in enumerate(domains)]
    return SubmitBatch("cpg", rows, normalize_domain, "hash")


async def test_jobs_whose_message_was_not_published_fail_and_the_caller_gets_queue_unavailable() -> None:
    store = InMemoryStore()
    batches = InMemoryBatches(store)
    queue = InMemoryQueue("work.fifo", visibility_timeout=30, max_receives=3)
    intake = RecordBatchThenPublish(batches, store, queue)
    ids = (f"id{i}" for i in itertools.count())
    submitted = await submit_batch(command(["a.com", "b.com", "c.com"]), catalog=load_catalog(None), intake=intake,
                                   batches=batches, job_size=2, max_domains=10, new_id=lambda: next(ids))
    assert submitted.batch.accepted == 3 and len(await queue.receive(max_messages=10)) == 2
    queue.fail_next_send(QueueUnavailable("down"))
    with pytest.raises(QueueUnavailable):
        await submit_batch(command(["d.com", "e.com", "f.com"]), catalog=load_catalog(None), intake=intake,
                           batches=batches, job_size=2, max_domains=10, new_id=lambda: next(ids))
    [second] = [b for b in batches.batches.values() if b.id != submitted.batch.id]
    jobs = [store.jobs[job_id] for job_id, batch_id in batches.job_batch.items() if batch_id == second.id]
    assert [(job.status, job.error) for job in jobs] == [(JobStatus.FAILED, NOT_QUEUED)] * 2
    assert (await batches.counts(second.id)).failed == 3


class StopsAfter:
    """A queue whose batch send stops after `sent` messages, as SQS's SendMessageBatch can."""

    def __init__(self, queue: InMemoryQueue, sent: int) -> None:
        self.queue, self.sent = queue, sent

    async def send_many(self, messages) -> None:  # type: ignore[no-untyped-def]
        await self.queue.send_many(messages[:self.sent])
        raise QueuePartlySent("the rest was refused", self.sent)


async def test_only_the_jobs_after_a_partly_sent_batch_of_messages_fail() -> None:
    store = InMemoryStore()
    batches = InMemoryBatches(store)
    queue = InMemoryQueue("work.fifo", visibility_timeout=30, max_receives=3)
    intake = RecordBatchThenPublish(batches, store, StopsAfter(queue, 2))  # type: ignore[arg-type]
    ids = (f"id{i}" for i in itertools.count())
    with pytest.raises(QueueUnavailable):
        await submit_batch(command(["a.com", "b.com", "c.com", "d.com"]), catalog=load_catalog(None), intake=intake,
                           batches=batches, job_size=1, max_domains=10, new_id=lambda: next(ids))
    [batch] = batches.batches.values()
    job_ids = [job_id for job_id, batch_id in batches.job_batch.items() if batch_id == batch.id]
    statuses = {store.jobs[job_id].domains[0]: store.jobs[job_id].status for job_id in job_ids}
    assert statuses == {"a.com": JobStatus.PENDING, "b.com": JobStatus.PENDING,
                        "c.com": JobStatus.FAILED, "d.com": JobStatus.FAILED}
    assert len(await queue.receive(max_messages=10)) == 2
