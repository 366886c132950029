"""The queue consumer, as the in-memory container builds it: acknowledge only after success,
replies, poison messages. On a virtual-time event loop (the container's clock is the loop's):
heartbeats, visibility timeouts and grace periods pass without waiting, in the same order."""

import asyncio
import contextlib
import json
from datetime import datetime, timezone
from typing import Any

import pytest

from firmsift.adapters.memory.providers import ScriptedLLM
from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.job_document import reply_dedup_id
from firmsift.domain.model import Job, JobStatus
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.worker.loop import Worker
from firmsift.ports.infrastructure_errors import QueueUnavailable
from tests.support.virtual_time import VIRTUAL_TIME_BACKEND, loop_clock

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, tzinfo=timezone.utc)
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Snacks."}'


@pytest.fixture
def anyio_backend() -> object:
    return VIRTUAL_TIME_BACKEND


def in_memory(llm: ScriptedLLM, **settings: Any) -> Container:
    """The in-memory graph on the event loop's clock, its worker polling without waiting and
    answering with `llm`."""
    container = in_memory_container(Settings(wait_time=0, llm_concurrency=4, **settings))
    container.llm.override(llm)
    container.clock.override(loop_clock)
    return container


@pytest.fixture
async def parts():
    container = in_memory(ScriptedLLM(YES), visibility_timeout=30, max_receives=3, max_job_seconds=60,
                          worker_jobs=2)
    return container.store(), container.work_queue(), container.replies(), container.worker()


async def add_job(store: InMemoryStore, queue: InMemoryQueue, job_id: str, reply_queue: str | None = None) -> None:
    await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                               domains=("a.com", "b.com"), reply_queue=reply_queue))
    await queue.send(json.dumps({"job_id": job_id}), group_id=job_id, dedup_id=job_id)


async def handle_one(queue: InMemoryQueue, worker: Worker) -> None:
    [message] = await queue.receive()
    await worker.handle(message)


async def test_a_finished_job_is_replied_to_then_deleted(parts) -> None:
    store, queue, replies, worker = parts
    await add_job(store, queue, "job-1", reply_queue="team")
    await handle_one(queue, worker)
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}
    [reply] = replies.published
    assert (reply.queue, reply.group_id) == ("team", "job-1")
    assert reply.dedup_id == reply_dedup_id("job-1", reply.body)  # per job and document
    document = json.loads(reply.body)
    assert document["status"] == "DONE" and [r["domain"] for r in document["results"]] == ["a.com", "b.com"]
    assert (await store.get_job("job-1")).reply_sent


@pytest.mark.parametrize("body", ["not json", "[]", '{"job": 1}', '{"job_id": ""}', '{"job_id": 5}', "{" * 10000])
async def test_malformed_messages_are_deleted_at_once(parts, body: str) -> None:
    _store, queue, _replies, worker = parts
    await queue.send(body, group_id="g", dedup_id="d")
    await handle_one(queue, worker)
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}


async def test_unknown_job_ids_are_deleted_at_once(parts) -> None:
    _store, queue, _replies, worker = parts
    await queue.send(json.dumps({"job_id": "ghost"}), group_id="ghost", dedup_id="ghost")
    await handle_one(queue, worker)
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}


async def test_an_unwritable_reply_queue_is_recorded_and_never_blocks_the_job(parts) -> None:
    store, queue, replies, worker = parts
    replies.fail_next_publish(QueueUnavailable("no such queue: team"))
    await add_job(store, queue, "job-1", reply_queue="team")
    await handle_one(queue, worker)
    job = await store.get_job("job-1")
    assert job.status is JobStatus.DONE and not job.reply_sent and "no such queue" in job.reply_error
    assert (await queue.approximate_counts()) == {"visible": 0, "in_flight": 0}


async def test_a_reply_error_quoting_poison_is_recorded_storable(parts) -> None:
    store, queue, replies, worker = parts
    replies.fail_next_publish(QueueUnavailable("no such queue: te\x00am\ud800"))
    await add_job(store, queue, "job-1", reply_queue="team")
    await handle_one(queue, worker)
    assert (await store.get_job("job-1")).reply_error == "no such queue: te\ufffdam\ufffd"


async def test_a_failing_job_is_not_deleted_and_comes_back(parts) -> None:
    store, queue, _replies, worker = parts
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
    await asyncio.sleep(31)  # past the visibility timeout
    [again] = await queue.receive()
    assert again.receive_count == 2


async def test_worker_runs_jobs_until_stopped(parts) -> None:
    store, queue, _replies, worker = parts
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


async def test_a_slow_job_keeps_its_message_hidden_until_it_is_done() -> None:
    """The heartbeat: with a 1 s visibility timeout (a beat every 1/3 s) and a 2 s LLM call, a
    second worker polling the same queue never gets the message while the first still works on it."""
    container = in_memory(ScriptedLLM(YES, delay=2.0), visibility_timeout=1.0, max_receives=10, max_job_seconds=60,
                          worker_jobs=1)
    store, queue, worker = container.store(), container.work_queue(), container.worker()
    await add_job(store, queue, "slow-job")
    [message] = await queue.receive()
    handling = asyncio.create_task(worker.handle(message))
    stolen = []
    while not handling.done():
        stolen += await queue.receive(wait_seconds=0.05)
    await handling
    assert stolen == []
    assert (await store.get_job("slow-job")).status is JobStatus.DONE
    assert await queue.approximate_counts() == {"visible": 0, "in_flight": 0}


async def test_a_hung_job_stops_extending_its_lease_after_max_job_seconds() -> None:
    container = in_memory(ScriptedLLM(YES, delay=30), visibility_timeout=0.3, max_receives=10, max_job_seconds=0.6,
                          worker_jobs=1)
    store, queue, worker = container.store(), container.work_queue(), container.worker()
    await add_job(store, queue, "hung-job")
    [message] = await queue.receive()
    handling = asyncio.create_task(worker.handle(message))
    redelivered = []
    for _ in range(200):  # up to 10 s; the cap (0.6 s) and the last lease (0.3 s) end in ~0.9 s
        redelivered = await queue.receive(wait_seconds=0.05)
        if redelivered:
            break
    handling.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await handling
    assert redelivered and redelivered[0].receive_count == 2  # handed on once the cap ran out


@pytest.mark.parametrize(("llm_delay", "finished"), [(0.1, True), (30.0, False)])
async def test_shutdown_lets_jobs_in_hand_finish_within_the_grace_period(llm_delay: float, finished: bool) -> None:
    container = in_memory(ScriptedLLM(YES, delay=llm_delay), visibility_timeout=30, max_receives=10,
                          max_job_seconds=60, worker_jobs=2, shutdown_grace_seconds=0.5)
    store, queue, worker = container.store(), container.work_queue(), container.worker()
    await add_job(store, queue, "job-1")
    stop = asyncio.Event()
    run = asyncio.create_task(worker.run(stop))
    while (await queue.approximate_counts())["in_flight"] == 0:
        await asyncio.sleep(0.01)
    stop.set()
    started = asyncio.get_running_loop().time()
    await asyncio.wait_for(run, 10)
    assert asyncio.get_running_loop().time() - started < 5  # the 0.5 s grace, not the 30 s call
    counts = await queue.approximate_counts()
    if finished:
        assert (await store.get_job("job-1")).status is JobStatus.DONE and counts["in_flight"] == 0
    else:
        # Unfinished: not deleted, so it comes back to another worker after its visibility timeout.
        assert (await store.get_job("job-1")).status is JobStatus.RUNNING and counts["in_flight"] == 1


async def test_a_late_delivery_after_a_redrive_sends_no_reply_for_the_unfinished_job() -> None:
    """Dead-lettered (FAILED reply sent), redriven (PENDING, a new message), and only then does
    the stale delivery end: it must not reply with PENDING. The redriven delivery replies DONE."""
    from firmsift.services.dead_letters import redrive_dead_lettered

    llm = ScriptedLLM(YES, delay=0.3)
    container = in_memory(llm, visibility_timeout=30, max_receives=10, max_job_seconds=60, worker_jobs=1,
                          dead_letter_check_interval=0.01)
    store, queue, replies, worker = container.store(), container.work_queue(), container.replies(), container.worker()
    dead = container.dead_letters()
    await add_job(store, queue, "job-1", reply_queue="team")
    [stale] = await queue.receive()
    late = asyncio.create_task(worker.handle(stale))
    while not llm.in_flight:
        await asyncio.sleep(0.01)
    await dead.send(stale.body, group_id="job-1", dedup_id="job-1")  # its receives ran out meanwhile
    stop = asyncio.Event()
    watcher = asyncio.create_task(worker.watch_dead_letters(stop))
    while not replies.published:
        await asyncio.sleep(0.01)
    stop.set()
    await watcher
    assert await redrive_dead_lettered(store, queue, limit=1) == ["job-1"]
    await late
    assert [json.loads(r.body)["status"] for r in replies.published] == ["FAILED"]
    [redriven] = await queue.receive()
    await worker.handle(redriven)
    assert [json.loads(r.body)["status"] for r in replies.published] == ["FAILED", "DONE"]
    assert len(llm.history) == 2  # the redriven delivery answered from the cache
