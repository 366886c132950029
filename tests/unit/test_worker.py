"""The queue consumer on in-memory fakes: acknowledge only after success, replies, poison messages."""

import asyncio
import json
from datetime import datetime, timezone

import pytest

from firmsift.adapters.classifier_files import load_catalog
from firmsift.adapters.memory_providers import ScriptedLLM, StaticSearch
from firmsift.adapters.memory_queue import InMemoryQueue, InMemoryReplyPublisher
from firmsift.adapters.memory_store import InMemoryStore
from firmsift.domain.errors import QueueUnavailable
from firmsift.domain.model import Job, JobStatus
from firmsift.domain.process import Classification
from firmsift.entrypoints.worker import Worker, WorkerConfig

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, tzinfo=timezone.utc)
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Snacks."}'


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def parts():
    store = InMemoryStore()
    clock = Clock()
    queue = InMemoryQueue("jobs", visibility_timeout=30, max_receives=3, clock=clock)
    replies = InMemoryReplyPublisher()
    classification = Classification(jobs=store, answers=store, known=store, search=StaticSearch(),
                                    llm=ScriptedLLM(YES), catalog=load_catalog(), llm_slots=asyncio.Semaphore(4))
    worker = Worker(queue, replies, classification,
                    WorkerConfig(wait_time=0, visibility_timeout=30, max_job_seconds=60, max_jobs=2))
    return store, queue, replies, worker, clock


async def add_job(store: InMemoryStore, queue: InMemoryQueue, job_id: str, reply_queue: str | None = None) -> None:
    await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                               domains=("a.com", "b.com"), reply_queue=reply_queue))
    await queue.send(json.dumps({"job_id": job_id}), group_id=job_id, dedup_id=job_id)


async def handle_one(queue: InMemoryQueue, worker: Worker) -> None:
    [message] = await queue.receive()
    await worker.handle(message)


async def test_a_finished_job_is_replied_to_then_deleted(parts) -> None:
    store, queue, replies, worker, _clock = parts
    await add_job(store, queue, "job-1", reply_queue="team")
    await handle_one(queue, worker)
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}
    [reply] = replies.published
    assert (reply.queue, reply.group_id, reply.dedup_id) == ("team", "job-1", "job-1")
    document = json.loads(reply.body)
    assert document["status"] == "DONE" and [r["domain"] for r in document["results"]] == ["a.com", "b.com"]
    assert (await store.get_job("job-1")).reply_sent


@pytest.mark.parametrize("body", ["not json", "[]", '{"job": 1}', '{"job_id": ""}', '{"job_id": 5}', "{" * 10000])
async def test_malformed_messages_are_deleted_at_once(parts, body: str) -> None:
    _store, queue, _replies, worker, _clock = parts
    await queue.send(body, group_id="g", dedup_id="d")
    await handle_one(queue, worker)
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}


async def test_unknown_job_ids_are_deleted_at_once(parts) -> None:
    _store, queue, _replies, worker, _clock = parts
    await queue.send(json.dumps({"job_id": "ghost"}), group_id="ghost", dedup_id="ghost")
    await handle_one(queue, worker)
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}


async def test_an_unwritable_reply_queue_is_recorded_and_never_blocks_the_job(parts) -> None:
    store, queue, replies, worker, _clock = parts
    replies.fail_next_publish(QueueUnavailable("no such queue: team"))
    await add_job(store, queue, "job-1", reply_queue="team")
    await handle_one(queue, worker)
    job = await store.get_job("job-1")
    assert job.status is JobStatus.DONE and not job.reply_sent and "no such queue" in job.reply_error
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}


async def test_a_failing_job_is_not_deleted_and_comes_back(parts) -> None:
    store, queue, _replies, worker, clock = parts
    await add_job(store, queue, "job-1")

    async def broken(*_args, **_kwargs):
        raise RuntimeError("database went away")

    store.save_result = broken  # type: ignore[method-assign]
    stop = asyncio.Event()
    run = asyncio.create_task(worker.run(stop))
    await asyncio.sleep(0.2)
    stop.set()
    await run
    assert (await queue.approximate_counts())["in_flight"] == 1
    clock.now += 31
    [again] = await queue.receive()
    assert again.receive_count == 2


async def test_worker_runs_jobs_until_stopped(parts) -> None:
    store, queue, _replies, worker, _clock = parts
    for n in range(5):
        await add_job(store, queue, f"job-{n}")
    stop = asyncio.Event()
    run = asyncio.create_task(worker.run(stop))

    async def statuses() -> set[JobStatus]:
        return {(await store.get_job(f"job-{n}")).status for n in range(5)}

    for _ in range(100):
        if await statuses() == {JobStatus.DONE}:
            break
        await asyncio.sleep(0.02)
    stop.set()
    await asyncio.wait_for(run, 5)
    assert await statuses() == {JobStatus.DONE}
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}
