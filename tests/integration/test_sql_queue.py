"""The database queue beyond the shared suite: several engines and processes on one SQLite
file, database failures, and the reply publishers."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from firmsift.adapters.memory.queue import InMemoryReplyPublisher, PublishedReply
from firmsift.adapters.sql import queue_send_statements
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.migrations import upgrade
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.queue_sending import SqlReplyPublisher
from firmsift.ports.infrastructure_errors import QueueUnavailable
from tests.support.databases import SQL_BACKENDS, migrated_engine
from tests.support.queue_backends import FakeClock
from tests.support.waiting import HANG_SECONDS, no_hang

pytestmark = pytest.mark.anyio


def _sql_queue(engine: Engine, **overrides: Any) -> SqlQueue:
    settings = {"visibility_timeout": 30, "max_receives": 3, "poll_interval": 0.1, **overrides}
    return SqlQueue(engine, "work.fifo", **settings)


async def test_a_message_sent_on_one_engine_is_received_on_another_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    sender_engine, receiver_engine = make_engine(url), make_engine(url)
    upgrade(sender_engine)
    try:
        first_id = await _sql_queue(sender_engine).send("one", group_id="a", dedup_id="1")
        await _sql_queue(sender_engine).send("two", group_id="b", dedup_id="2")
        [message] = await _sql_queue(receiver_engine).receive(wait_seconds=2)
        assert (message.message_id, message.body) == (first_id, "one")
    finally:
        sender_engine.dispose()
        receiver_engine.dispose()
    restarted = make_engine(url)
    try:
        queue = _sql_queue(restarted)
        assert [m.body for m in await queue.receive(max_messages=10)] == ["two"]
        assert await queue.approximate_counts() == {"visible": 0, "in_flight": 2}
    finally:
        restarted.dispose()


_CHILD_SENDER = """
import asyncio, sys
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.queue import SqlQueue
queue = SqlQueue(make_engine(sys.argv[1]), "work.fifo", visibility_timeout=30, max_receives=3)
print(asyncio.run(queue.send("from another process", group_id="g", dedup_id="d")))
"""


async def test_a_message_sent_by_another_process_reaches_a_waiting_long_poll(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    engine = make_engine(url)
    upgrade(engine)
    try:
        # Waiting an hour (polling every 0.1 s: SQLite notifies nobody), however slow the child is.
        waiting = asyncio.create_task(_sql_queue(engine).receive(wait_seconds=3600))
        child = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-c", _CHILD_SENDER, url],
            capture_output=True, text=True, timeout=HANG_SECONDS,
        )
        assert child.returncode == 0, child.stderr
        with no_hang():
            [message] = await waiting
        assert (message.message_id, message.body) == (child.stdout.strip(), "from another process")
    finally:
        engine.dispose()


async def test_send_on_a_broken_database_raises_queue_unavailable(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'never-migrated.db'}")
    try:
        with pytest.raises(QueueUnavailable, match="work.fifo"):
            await _sql_queue(engine).send("job", group_id="g", dedup_id="d")
        with pytest.raises(QueueUnavailable):
            await SqlReplyPublisher(engine).publish("replies.fifo", "r", group_id="g", dedup_id="d")
    finally:
        engine.dispose()


async def test_replies_are_published_to_the_named_queue_and_read_back(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'queue.db'}")
    upgrade(engine)
    try:
        publisher = SqlReplyPublisher(engine)
        await publisher.publish("replies.fifo", "job-1 done", group_id="job-1", dedup_id="job-1")
        await publisher.publish("replies.fifo", "job-1 again", group_id="job-1", dedup_id="job-1")
        await publisher.publish("other.fifo", "job-1 done", group_id="job-1", dedup_id="job-1")
        replies = SqlQueue(engine, "replies.fifo", visibility_timeout=30, max_receives=None)
        assert [m.body for m in await replies.read_messages(consume=False)] == ["job-1 done"]
        assert [m.body for m in await replies.read_messages()] == ["job-1 done"]
        assert await replies.read_messages() == []
        other = SqlQueue(engine, "other.fifo", visibility_timeout=30, max_receives=None)
        assert await other.approximate_counts() == {"visible": 1, "in_flight": 0}
    finally:
        engine.dispose()


async def test_the_in_memory_publisher_records_replies() -> None:
    publisher = InMemoryReplyPublisher()
    await publisher.publish("replies.fifo", "body", group_id="job-1", dedup_id="job-1")
    publisher.fail_next_publish(QueueUnavailable("down"))
    with pytest.raises(QueueUnavailable):
        await publisher.publish("replies.fifo", "body", group_id="job-2", dedup_id="job-2")
    assert publisher.published == [PublishedReply("replies.fifo", "body", "job-1", "job-1")]


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_an_expired_dedup_id_the_purge_left_does_not_block_a_new_send(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A purge deletes at most PURGE_LIMIT expired ids; a send whose own id is among those left
    (or held by another sender's purge) is a new message, not a duplicate or an error."""
    monkeypatch.setattr(queue_send_statements, "PURGE_LIMIT", 1)
    clock = FakeClock()
    with migrated_engine(backend, tmp_path) as engine:
        queue = _sql_queue(engine, max_receives=None, dedup_window=300, clock=clock)
        first = []
        for body in ("a", "b", "c"):
            first.append(await queue.send(body, group_id=body, dedup_id=body))
            await clock.advance(1)
        await clock.advance(300)
        # In reverse: each purge takes the oldest expired id left, never the one being sent.
        again = [await queue.send(body, group_id=body, dedup_id=body) for body in ("c", "b", "a")]
        assert len(set(first + again)) == 6  # three new messages, none taken for a duplicate
        assert await queue.send("c", group_id="c", dedup_id="c") == again[0]  # the new window holds
        with engine.connect() as conn:
            kept = conn.execute(text("SELECT dedup_id, expires_at FROM queue_dedup ORDER BY dedup_id")).all()
        assert [(dedup_id, expires_at - clock()) for dedup_id, expires_at in kept] == [
            ("a", 300), ("b", 300), ("c", 300)
        ]
