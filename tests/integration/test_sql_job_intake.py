"""The database-queue intake on SQLite and PostgreSQL: a job's rows and its message are written
in one transaction, so a failure leaves neither behind."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, event, text

from firmsift.adapters.sql import queue as sql_queue
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.job_intake import SqlJobIntake
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.model import Job, JobStatus
from firmsift.ports.infrastructure_errors import QueueUnavailable
from tests.support.waiting import no_hang

pytestmark = pytest.mark.anyio


def _parts(engine: Engine, poll_interval: float = 10) -> tuple[SqlStore, SqlQueue, SqlJobIntake]:
    store = SqlStore(engine)
    queue = SqlQueue(engine, "work.fifo", visibility_timeout=30, max_receives=3, poll_interval=poll_interval)
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
    # Polling every hour and waiting as long: a receive that ends at all was woken by the accept.
    _, queue, intake = _parts(engine, poll_interval=3600)
    waiting = asyncio.create_task(queue.receive(wait_seconds=3600))
    await asyncio.sleep(0.3)  # most likely waiting by then; if not, its first look finds the job
    await intake.accept(_job())
    with no_hang():
        [message] = await waiting
    assert json.loads(message.body)["job_id"] == _job().id


# A job without an Idempotency-Key is written with others in a group (the fresh-groups insert);
# a job with one alone (insert_message, behind its key's conflict check).
MESSAGE_WRITERS = {None: "insert_fresh_group_messages", "key-1": "insert_message"}


@pytest.mark.parametrize("key", list(MESSAGE_WRITERS))
async def test_a_failure_writing_the_message_leaves_no_job_behind(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, key: str | None
) -> None:
    store, queue, intake = _parts(engine)
    writer = MESSAGE_WRITERS[key]
    real_write = getattr(sql_queue, writer)

    def write_then_fail(conn: Connection, **message: object) -> int:
        real_write(conn, **message)  # the job rows and the message row are written ...
        conn.execute(text("INSERT INTO queue_dedup_missing VALUES (1)"))  # ... then the database refuses
        raise AssertionError("unreachable")

    monkeypatch.setattr(sql_queue, writer, write_then_fail)
    job = replace(_job(), idempotency_key=key)
    with pytest.raises(QueueUnavailable, match=f"job {job.id} could not be durably accepted"):
        await intake.accept(job)
    assert await store.get_job(job.id) is None
    assert _row_counts(engine) == {"jobs": 0, "job_domains": 0, "queue_messages": 0, "queue_dedup": 0}
    monkeypatch.undo()
    await intake.accept(job)  # nothing half-written stands in the way of a retry
    assert _row_counts(engine) == {"jobs": 1, "job_domains": 2, "queue_messages": 1, "queue_dedup": 1}


def _count_commits(engine: Engine) -> list[int]:
    commits = [0]

    def counted(_conn: Connection) -> None:
        commits[0] += 1

    event.listen(engine, "commit", counted)
    return commits


async def test_jobs_accepted_at_once_share_one_transaction(engine: Engine) -> None:
    store, queue, intake = _parts(engine)
    jobs = [_job(f"0b6f3c4e-0000-4000-8000-{n:012d}") for n in range(30)]
    commits = _count_commits(engine)
    await asyncio.gather(*(intake.accept(job) for job in jobs))
    assert commits == [1]
    assert _row_counts(engine) == {"jobs": 30, "job_domains": 60, "queue_messages": 30, "queue_dedup": 30}
    received = await queue.receive(max_messages=10)
    assert [json.loads(m.body)["job_id"] for m in received] == [job.id for job in jobs[:10]]  # FIFO by intake
    stored = [await store.get_job(job.id) for job in jobs]
    assert [job.domains if job else None for job in stored] == [job.domains for job in jobs]


async def test_a_failed_shared_transaction_fails_every_job_in_it_and_records_none(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, intake = _parts(engine)

    def refuse(conn: Connection, **_message: object) -> None:
        conn.execute(text("INSERT INTO queue_dedup_missing VALUES (1)"))

    monkeypatch.setattr(sql_queue, "insert_fresh_group_messages", refuse)
    jobs = [_job(f"0b6f3c4e-0000-4000-8000-{n:012d}") for n in range(5)]
    outcomes = await asyncio.gather(*(intake.accept(job) for job in jobs), return_exceptions=True)
    assert [type(outcome) for outcome in outcomes] == [QueueUnavailable] * 5
    assert [str(outcome).split(" could not")[0] for outcome in outcomes] == [f"job {job.id}" for job in jobs]
    assert _row_counts(engine) == {"jobs": 0, "job_domains": 0, "queue_messages": 0, "queue_dedup": 0}


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
