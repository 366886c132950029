"""The database-queue intake on SQLite and PostgreSQL: a job's rows and its message are written
in one transaction, so a failure leaves neither behind."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, text

from firmsift.adapters.sql import queue as sql_queue
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.job_intake import SqlJobIntake
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.errors import QueueUnavailable
from firmsift.domain.model import Job, JobStatus
from tests.support.databases import SQL_BACKENDS, migrated_engine

pytestmark = pytest.mark.anyio


@pytest.fixture(params=SQL_BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with migrated_engine(request.param, tmp_path) as engine:
        yield engine

def _parts(engine: Engine) -> tuple[SqlStore, SqlQueue, SqlJobIntake]:
    store = SqlStore(engine)
    queue = SqlQueue(engine, "work.fifo", visibility_timeout=30, max_receives=3, poll_interval=10)
    return store, queue, SqlJobIntake(engine, store, queue)


def _job(job_id: str = "0b6f3c4e-0000-4000-8000-000000000001") -> Job:
    return Job(id=job_id, classifier="cpg", status=JobStatus.PENDING,
               created_at=datetime(2026, 11, 29, tzinfo=timezone.utc), domains=("a.com", "b.com"))


def _row_counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {table: conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
                for table in ("jobs", "job_domains", "queue_messages", "queue_dedup")}


async def test_accept_records_the_job_and_queues_its_id(engine: Engine) -> None:
    store, queue, intake = _parts(engine)
    job = _job()
    await intake.accept(job)
    stored = await store.get_job(job.id)
    assert stored is not None and stored.status is JobStatus.PENDING and stored.domains == job.domains
    [message] = await queue.receive()
    assert json.loads(message.body) == {"job_id": job.id}
    assert message.group_id == job.id


async def test_accept_wakes_a_receiver_waiting_in_this_process(engine: Engine) -> None:
    _, queue, intake = _parts(engine)  # poll_interval is 10 s: only a wake-up is this fast
    waiting = asyncio.create_task(queue.receive(wait_seconds=20))
    await asyncio.sleep(0.3)
    await intake.accept(_job())
    [message] = await asyncio.wait_for(waiting, 2)
    assert json.loads(message.body)["job_id"] == _job().id


async def test_a_failure_writing_the_message_leaves_no_job_behind(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, queue, intake = _parts(engine)
    real_insert = sql_queue.insert_message

    def insert_then_fail(conn: Connection, **message: object) -> int:
        real_insert(conn, **message)  # the job rows and the message row are written ...
        conn.execute(text("INSERT INTO queue_dedup_missing VALUES (1)"))  # ... then the database refuses
        raise AssertionError("unreachable")

    monkeypatch.setattr(sql_queue, "insert_message", insert_then_fail)
    job = _job()
    with pytest.raises(QueueUnavailable, match=f"job {job.id} could not be durably accepted"):
        await intake.accept(job)
    assert await store.get_job(job.id) is None
    assert _row_counts(engine) == {"jobs": 0, "job_domains": 0, "queue_messages": 0, "queue_dedup": 0}
    monkeypatch.undo()
    await intake.accept(job)  # nothing half-written stands in the way of a retry
    assert _row_counts(engine) == {"jobs": 1, "job_domains": 2, "queue_messages": 1, "queue_dedup": 1}


async def test_a_missing_queue_table_fails_the_intake_cleanly(engine: Engine) -> None:
    store, _, intake = _parts(engine)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE queue_dedup"))
    with pytest.raises(QueueUnavailable, match="queue_dedup"):
        await intake.accept(_job())
    assert await store.get_job(_job().id) is None


def test_the_store_and_queue_must_share_the_intakes_engine(engine: Engine, tmp_path: Path) -> None:
    other = make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    store, queue, _ = _parts(engine)
    try:
        with pytest.raises(ValueError, match="engine it was given"):
            SqlJobIntake(engine, SqlStore(other), queue)
        with pytest.raises(ValueError):
            SqlJobIntake(other, store, queue)
    finally:
        other.dispose()
