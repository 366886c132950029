"""`firmsift dlq redrive` sends its messages together; when the queue takes only some of them,
the jobs whose message may be missing go back to FAILED, so the next redrive finds them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

import pytest

from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.model import Job, JobStatus
from firmsift.domain.work_messages import OutgoingMessage
from firmsift.ports.infrastructure_errors import QueuePartlySent
from firmsift.services.dead_letters import DEAD_LETTER_ERROR, redrive_dead_lettered

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)


class TakesThree(InMemoryQueue):
    """A queue that takes the first three messages of a send_many and fails the rest."""

    async def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        await super().send_many(messages[:3])
        if len(messages) > 3:
            raise QueuePartlySent("the queue went away (3 of them sent)", 3)


async def failed_jobs(store: InMemoryStore, count: int) -> list[str]:
    ids = [f"job-{n}" for n in range(count)]
    for job_id in ids:
        await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                                   domains=("a.com",)))
        await store.set_job_status(job_id, JobStatus.FAILED, error=DEAD_LETTER_ERROR)
    return ids


async def test_every_redriven_job_gets_its_message() -> None:
    store, queue = InMemoryStore(), InMemoryQueue("jobs", visibility_timeout=30, max_receives=None)
    ids = await failed_jobs(store, 12)
    assert await redrive_dead_lettered(store, queue, limit=20) == ids
    assert (await queue.approximate_counts())["visible"] == 12
    assert {(await store.get_job(job_id)).status for job_id in ids} == {JobStatus.PENDING}


async def test_jobs_whose_message_may_be_missing_go_back_to_failed() -> None:
    store, queue = InMemoryStore(), TakesThree("jobs", visibility_timeout=30, max_receives=None)
    ids = await failed_jobs(store, 5)
    with pytest.raises(QueuePartlySent):
        await redrive_dead_lettered(store, queue, limit=20)
    assert [(await store.get_job(job_id)).status for job_id in ids] == [JobStatus.PENDING] * 3 + [JobStatus.FAILED] * 2
    assert [job.id for job in await store.list_failed_jobs(error=DEAD_LETTER_ERROR, limit=20)] == ids[3:]
