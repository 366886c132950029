"""Dead letters on the embedded backend: a worker drains them into FAILED jobs (replying to the
caller), and a redrive from that record retries the jobs to DONE."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import Engine

from firmsift.adapters.memory.providers import ScriptedLLM, StaticSearch
from firmsift.adapters.memory.queue import InMemoryReplyPublisher
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.migrations import upgrade
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.queue_sending import SqlReplyPublisher
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.job_document import job_document
from firmsift.domain.model import Completion, Job, JobStatus
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.worker.loop import Worker
from firmsift.ports.queue import ReplyPublisher
from firmsift.services.dead_letters import DEAD_LETTER_ERROR, redrive_dead_lettered
from tests.support.databases import SQL_BACKENDS, migrated_engine
from tests.support.queue_backends import FakeClock

pytestmark = pytest.mark.anyio


YES = '{"is_cpg": true, "confidence": 5, "reasoning": "ok"}'


class HeldLLM(ScriptedLLM):
    """A scripted LLM whose calls stay in flight until `release` is set: the test, not the speed
    of a busy machine, decides when an answer comes."""

    def __init__(self, default: str) -> None:
        super().__init__(default)
        self.release = asyncio.Event()

    async def complete(self, system: str, user: str, *, json_schema: dict) -> Completion:
        self.in_flight += 1
        try:
            await self.release.wait()
        finally:
            self.in_flight -= 1
        return await super().complete(system, user, json_schema=json_schema)


def worker_on(engine: Engine, work: SqlQueue, dead: SqlQueue, replies: ReplyPublisher,
              llm: ScriptedLLM | None = None) -> Worker:
    """The production worker on this database and these queues, asking a scripted LLM: one job at
    a time, checking the dead-letter queue every 50 ms."""
    container = Container(settings=Settings(precheck=False, wait_time=0, visibility_timeout=10, max_job_seconds=60, worker_jobs=1,
                                            dead_letter_check_interval=0.05, llm_concurrency=2))
    container.override_providers(engine=engine, work_queue=work, dead_letters=dead, replies=replies,
                                 llm=llm or ScriptedLLM(YES), searches=(StaticSearch(),))
    return container.worker()


def job(number: int) -> Job:
    return Job(id=f"11111111-1111-4111-8111-{number:012d}", classifier="cpg", status=JobStatus.PENDING,
               created_at=datetime.now(timezone.utc), domains=(f"d{number}.com",), reply_queue="team")


async def test_dead_lettered_jobs_fail_reply_and_can_be_redriven(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'dlq.db'}")
    upgrade(engine)
    clock = FakeClock()
    work = SqlQueue(engine, "jobs", visibility_timeout=10, max_receives=2, clock=clock)
    dead = SqlQueue(engine, work.dead_letter_queue, visibility_timeout=10, max_receives=None, clock=clock)
    store = SqlStore(engine)
    replies = InMemoryReplyPublisher()
    worker = worker_on(engine, work, dead, replies)

    jobs = [job(n) for n in range(12)]  # more than one receive batch of dead letters
    for each in jobs:
        await store.create_job(each)
        await work.send(json.dumps({"job_id": each.id}), group_id=each.id, dedup_id=each.id)
    for _ in range(2):  # two deliveries whose worker died
        assert len(await work.receive(max_messages=10)) + len(await work.receive(max_messages=10)) == 12
        clock.now += 11
    assert await work.receive(max_messages=10) == []  # the third receive dead-lettered them
    assert (await dead.approximate_counts())["visible"] == 12

    stop = asyncio.Event()
    watcher = asyncio.create_task(worker.watch_dead_letters(stop))
    for _ in range(200):
        if len(await store.list_failed_jobs(error=DEAD_LETTER_ERROR, limit=100)) == 12:
            break
        await asyncio.sleep(0.02)
    stop.set()
    await watcher
    assert len(await store.list_failed_jobs(error=DEAD_LETTER_ERROR, limit=100)) == 12
    assert sorted(json.loads(r.body)["status"] for r in replies.published) == ["FAILED"] * 12
    assert await dead.approximate_counts() == {"visible": 0, "in_flight": 0}  # drained: the jobs hold the record

    retried = await redrive_dead_lettered(store, work, limit=5)
    assert len(retried) == 5
    assert len(await store.list_failed_jobs(error=DEAD_LETTER_ERROR, limit=100)) == 7
    for message in await work.receive(max_messages=10):
        await worker.handle(message)
    assert {(await store.get_job(job_id)).status for job_id in retried} == {JobStatus.DONE}
    finals = [json.loads(r.body) for r in replies.published if json.loads(r.body)["job_id"] in retried]
    assert sorted(d["status"] for d in finals) == ["DONE"] * 5 + ["FAILED"] * 5
    engine.dispose()


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_a_late_delivery_leaves_a_dead_lettered_job_as_its_caller_was_told(backend: str, tmp_path: Path) -> None:
    """Issue 10's flip: a job is dead-lettered (FAILED, reply sent) while a stale delivery still
    waits for the LLM. When that answer comes, GET and the reply still agree (FAILED, no result
    added), no domain claims a cached answer, and the paid answer waits in the cache for the redrive."""
    with migrated_engine(backend, tmp_path) as engine:
        clock = FakeClock()
        work = SqlQueue(engine, "jobs", visibility_timeout=10, max_receives=2, clock=clock)
        dead = SqlQueue(engine, work.dead_letter_queue, visibility_timeout=10, max_receives=None, clock=clock)
        store = SqlStore(engine)
        replies = InMemoryReplyPublisher()
        llm = HeldLLM(YES)
        worker = worker_on(engine, work, dead, replies, llm)
        slow = job(1)
        await store.create_job(slow)
        await work.send(json.dumps({"job_id": slow.id}), group_id=slow.id, dedup_id=slow.id)
        [message] = await work.receive()
        late = asyncio.create_task(worker.handle(message))
        for _ in range(200):
            if llm.in_flight:
                break
            await asyncio.sleep(0.01)
        # Meanwhile its message went through its receives and into the dead-letter queue.
        await dead.send(json.dumps({"job_id": slow.id}), group_id=slow.id, dedup_id=slow.id)
        stop = asyncio.Event()
        watcher = asyncio.create_task(worker.watch_dead_letters(stop))
        for _ in range(200):
            if replies.published:
                break
            await asyncio.sleep(0.01)
        stop.set()
        await watcher
        assert llm.in_flight == 1  # the caller was told while the stale delivery still waited
        llm.release.set()
        await late

        shown = job_document(await store.get_job(slow.id))
        assert shown["status"] == "FAILED" and shown["error"] == DEAD_LETTER_ERROR
        assert all(json.loads(r.body) == shown for r in replies.published)  # GET and every reply agree
        assert all(r["source"] != "cache" for r in shown["results"])
        assert (await store.get_answers(["d1.com"], "cpg"))["d1.com"].answer is True  # paid for, kept

        assert await redrive_dead_lettered(store, work, limit=1) == [slow.id]
        [again] = await work.receive()
        await worker.handle(again)
        final = job_document(await store.get_job(slow.id))
        assert final["status"] == "DONE" and [r["source"] for r in final["results"]] == ["cache"]
        assert json.loads(replies.published[-1].body) == final and len(llm.history) == 1


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_a_redriven_job_s_final_reply_is_not_swallowed_as_a_duplicate(backend: str, tmp_path: Path) -> None:
    """The reply queue deduplicates for 5 minutes; the FAILED reply of a dead-lettered job and the
    DONE reply after its redrive are two different documents and must both arrive, while the same
    document published twice arrives once."""
    with migrated_engine(backend, tmp_path) as engine:
        clock = FakeClock()
        work = SqlQueue(engine, "jobs", visibility_timeout=10, max_receives=2, clock=clock)
        dead = SqlQueue(engine, work.dead_letter_queue, visibility_timeout=10, max_receives=None, clock=clock)
        team = SqlQueue(engine, "team", visibility_timeout=10, max_receives=None, clock=clock)
        store = SqlStore(engine)
        worker = worker_on(engine, work, dead, SqlReplyPublisher(engine, clock=clock))
        failed = job(1)
        await store.create_job(failed)
        await dead.send(json.dumps({"job_id": failed.id}), group_id=failed.id, dedup_id=failed.id)
        stop = asyncio.Event()
        watcher = asyncio.create_task(worker.watch_dead_letters(stop))
        while (await dead.approximate_counts())["visible"] or not (await store.get_job(failed.id)).reply_sent:
            await asyncio.sleep(0.01)
        stop.set()
        await watcher
        await redrive_dead_lettered(store, work, limit=1)
        [message] = await work.receive()
        await worker.handle(message)
        await store.record_reply(failed.id, sent=False, error=None)
        await worker.handle(message)  # the same final document once more: deduplicated
        statuses = []
        while received := await team.receive():  # FIFO: the group's next message once this one is deleted
            statuses += [json.loads(m.body)["status"] for m in received]
            await team.delete(received[0].receipt)
        assert statuses == ["FAILED", "DONE"]
