"""Dead letters on the embedded backend: the job turns FAILED (and is replied to), then a
redrive reopens it and a worker finishes it."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from firmsift.adapters.classifier_files import load_catalog
from firmsift.adapters.memory_providers import ScriptedLLM, StaticSearch
from firmsift.adapters.memory_queue import InMemoryReplyPublisher
from firmsift.adapters.sql_dead_letters import SqlDeadLetters
from firmsift.adapters.sql_engine import make_engine
from firmsift.adapters.sql_migrations import upgrade
from firmsift.adapters.sql_queue import SqlQueue
from firmsift.adapters.sql_store import SqlStore
from firmsift.domain.dead_letters import DEAD_LETTER_ERROR, reopen_redriven
from firmsift.domain.model import Job, JobStatus
from firmsift.domain.process import Classification
from firmsift.entrypoints.worker import Worker, WorkerConfig

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_dead_lettered_job_fails_replies_and_can_be_redriven(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'dlq.db'}")
    upgrade(engine)
    clock = Clock()
    work = SqlQueue(engine, "jobs", visibility_timeout=10, max_receives=2, clock=clock)
    dead = SqlQueue(engine, work.dead_letter_queue, visibility_timeout=10, max_receives=None, clock=clock)
    dead_letters = SqlDeadLetters(work, dead)
    store = SqlStore(engine)
    replies = InMemoryReplyPublisher()
    worker = Worker(work, replies,
                    Classification(jobs=store, answers=store, known=store, search=StaticSearch(),
                                   llm=ScriptedLLM('{"is_cpg": true, "confidence": 5, "reasoning": "ok"}'),
                                   catalog=load_catalog(), llm_slots=asyncio.Semaphore(2)),
                    WorkerConfig(wait_time=0, visibility_timeout=10, max_job_seconds=60, max_jobs=1,
                                 dead_letter_check_interval=0.05),
                    dead_letters=dead_letters)

    job = Job(id="11111111-1111-4111-8111-111111111111", classifier="cpg", status=JobStatus.PENDING,
              created_at=datetime.now(timezone.utc), domains=("a.com",), reply_queue="team")
    await store.create_job(job)
    await work.send(json.dumps({"job_id": job.id}), group_id=job.id, dedup_id=job.id)
    for _ in range(2):  # two deliveries whose worker died
        assert len(await work.receive()) == 1
        clock.now += 11
    assert await work.receive() == []  # the third receive moved it to the dead-letter queue
    [letter] = await dead_letters.peek(max_messages=10)
    assert json.loads(letter.body) == {"job_id": job.id}

    stop = asyncio.Event()
    watcher = asyncio.create_task(worker.watch_dead_letters(stop))
    for _ in range(100):
        if (await store.get_job(job.id)).status is JobStatus.FAILED:
            break
        await asyncio.sleep(0.02)
    stop.set()
    await watcher
    failed = await store.get_job(job.id)
    assert failed.status is JobStatus.FAILED and failed.error == DEAD_LETTER_ERROR
    [reply] = replies.published
    assert json.loads(reply.body)["status"] == "FAILED"
    assert len(await dead_letters.peek(max_messages=10)) == 1  # left for the operator

    assert await reopen_redriven(await dead_letters.peek(max_messages=10), store) == [job.id]
    moved = await dead_letters.redrive(max_messages=10)
    assert moved == 1 and await dead_letters.peek(max_messages=10) == []
    [again] = await work.receive()
    await worker.handle(again)
    assert (await store.get_job(job.id)).status is JobStatus.DONE
    assert [json.loads(r.body)["status"] for r in replies.published] == ["FAILED", "DONE"]
    engine.dispose()
