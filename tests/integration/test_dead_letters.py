"""Dead letters on the embedded backend: a worker drains them into FAILED jobs (replying to the
caller), and a redrive from that record retries the jobs to DONE."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from firmsift.adapters.classifier_files import load_catalog
from firmsift.adapters.memory_providers import ScriptedLLM, StaticSearch
from firmsift.adapters.memory_queue import InMemoryReplyPublisher
from firmsift.adapters.sql_engine import make_engine
from firmsift.adapters.sql_migrations import upgrade
from firmsift.adapters.sql_queue import SqlQueue
from firmsift.adapters.sql_store import SqlStore
from firmsift.domain.dead_letters import DEAD_LETTER_ERROR, redrive_dead_lettered
from firmsift.domain.model import Job, JobStatus
from firmsift.domain.process import Classification
from firmsift.entrypoints.worker import Worker, WorkerConfig
from tests.support.queue_backends import FakeClock

pytestmark = pytest.mark.anyio


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
    worker = Worker(work, replies,
                    Classification(jobs=store, answers=store, known=store, search=StaticSearch(),
                                   llm=ScriptedLLM('{"is_cpg": true, "confidence": 5, "reasoning": "ok"}'),
                                   catalog=load_catalog(), llm_slots=asyncio.Semaphore(2)),
                    WorkerConfig(wait_time=0, visibility_timeout=10, max_job_seconds=60, max_jobs=1,
                                 dead_letter_check_interval=0.05),
                    dead_letters=dead)

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
