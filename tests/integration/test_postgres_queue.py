"""The database queue on a real PostgreSQL server, beyond the shared behaviour suite: concurrent
claims from many engines (FOR UPDATE SKIP LOCKED, one message in flight per group) and
LISTEN/NOTIFY wake-ups across engines and processes, including after the listener is cut off."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, text

from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.queue_listen import APPLICATION_NAME
from firmsift.ports.queue import QueueMessage
from tests.support.postgres import postgres_engine

pytestmark = pytest.mark.anyio
SLOW_POLL = 10.0  # no test below waits this long: a prompt wake-up can only be a notification


@pytest.fixture
def database() -> Iterator[Engine]:
    with postgres_engine() as engine:
        yield engine


@pytest.fixture
async def engines(database: Engine) -> AsyncIterator[list[Engine]]:
    """Four more engines on the database, as four processes would hold, and enough threads
    that their transactions really run at the same time."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=32))
    opened = [make_engine(database.url, pool_size=4, max_overflow=0) for _ in range(4)]
    yield opened
    for engine in opened:
        engine.dispose()


def _queue(engine: Engine, *, poll_interval: float = SLOW_POLL, **overrides: object) -> SqlQueue:
    settings: dict[str, object] = {"visibility_timeout": 120, "max_receives": None, "poll_interval": poll_interval, **overrides}
    return SqlQueue(engine, "work.fifo", **settings)


async def test_concurrent_receivers_never_share_a_message_or_a_group(engines: list[Engine]) -> None:
    groups, per_group = 40, 5
    total = groups * per_group
    queues = [_queue(e, poll_interval=0.05) for e in engines]
    delivered: list[QueueMessage] = []
    in_flight: Counter[str] = Counter()
    overlaps: list[str] = []

    async def send(n: int) -> None:
        group, position = divmod(n, per_group)
        # A group's messages go out at once from different engines: sends race on the same group.
        await queues[n % len(queues)].send(f"{group}:{position}", group_id=f"g{group}", dedup_id=str(n))

    async def receive(queue: SqlQueue) -> None:
        while len(delivered) < total:
            batch = await queue.receive(max_messages=random.randint(1, 10), wait_seconds=0.2)
            for message in batch:
                if in_flight[message.group_id]:
                    overlaps.append(message.group_id)
                in_flight[message.group_id] += 1
            delivered.extend(batch)
            await asyncio.sleep(random.uniform(0, 0.01))  # hold them a moment, as a worker would
            for message in batch:
                # Released before the delete: the group stays blocked until the delete commits.
                in_flight[message.group_id] -= 1
                await queue.delete(message.receipt)

    senders = [send(n) for n in random.sample(range(total), total)]
    receivers = [receive(queues[i % len(queues)]) for i in range(12)]
    await asyncio.wait_for(asyncio.gather(*senders, *receivers), 120)

    assert overlaps == []  # never two messages of one group in flight at once
    ids = [m.message_id for m in delivered]
    assert len(ids) == len(set(ids)) == total  # each message exactly once (no lease ever lapsed)
    assert {m.receive_count for m in delivered} == {1}
    by_group: defaultdict[str, list[int]] = defaultdict(list)
    for message in delivered:
        by_group[message.group_id].append(int(message.message_id))
    assert all(order == sorted(order) for order in by_group.values())  # FIFO within each group
    assert await queues[0].approximate_counts() == {"visible": 0, "in_flight": 0}


async def test_sends_to_one_group_take_turns_so_a_late_commit_cannot_jump_the_queue(
    engines: list[Engine],
) -> None:
    # Without the per-group lock the second send would commit first with the higher id, be
    # delivered, and then the first (lower id) would become the head while it is in flight.
    first_sender, second_sender, receiver = (_queue(e) for e in engines[:3])
    with engines[0].connect() as conn, conn.begin():
        first_sender.enqueue_in(conn, "first", group_id="g", dedup_id="1")
        second = asyncio.create_task(second_sender.send("second", group_id="g", dedup_id="2"))
        await asyncio.sleep(0.5)
        assert not second.done()  # waits for the first send's transaction
        assert await receiver.receive(max_messages=10) == []
    await asyncio.wait_for(second, 5)
    [head] = await receiver.receive(max_messages=10)
    assert head.body == "first"
    assert await receiver.receive(max_messages=10) == []  # the group waits behind its head
    await receiver.delete(head.receipt)
    assert [m.body for m in await receiver.receive(max_messages=10)] == ["second"]


async def _timed_receive(queue: SqlQueue, wait_seconds: float) -> tuple[list[QueueMessage], float]:
    messages = await queue.receive(wait_seconds=wait_seconds)
    return messages, time.perf_counter()


async def _wait_for_listener(database: Engine, *, other_than: int | None = None) -> int:
    """The server pid of the queue listener's connection, once it is LISTENing."""
    query = text("SELECT pid FROM pg_stat_activity WHERE application_name = :name"
                 " AND datname = current_database() AND pid IS DISTINCT FROM :other")
    for _ in range(100):
        with database.connect() as conn:
            pid = conn.execute(query, {"name": APPLICATION_NAME, "other": other_than}).scalar()
        if pid is not None:
            await asyncio.sleep(0.3)  # time for the LISTEN itself after connecting
            return int(pid)
        await asyncio.sleep(0.05)
    raise AssertionError("the queue listener never connected")


async def test_a_send_on_another_engine_wakes_a_waiting_receive_at_once(
    database: Engine, engines: list[Engine]
) -> None:
    receiver, sender = _queue(engines[0]), _queue(engines[1])
    started = time.perf_counter()
    waiting = asyncio.create_task(_timed_receive(receiver, wait_seconds=20))
    await _wait_for_listener(database)
    await sender.send("wake", group_id="g", dedup_id="d")
    messages, woke_at = await asyncio.wait_for(waiting, 5)
    assert [m.body for m in messages] == ["wake"]
    # Engines do not share doorbells, and the receive's next look after its first is SLOW_POLL
    # after it started: found before then, it was the notification (not timed against the send,
    # which a loaded machine can stretch past any small figure).
    assert woke_at - started < SLOW_POLL


async def test_without_a_notification_only_polling_finds_a_message(
    database: Engine, engines: list[Engine]
) -> None:
    # The control for the test above: a row written behind the queue's back notifies nobody,
    # so a receive polling every 10 s finds it only at the last look when its 3 s wait ends.
    receiver = _queue(engines[0])
    waiting = asyncio.create_task(_timed_receive(receiver, wait_seconds=3))
    await _wait_for_listener(database)
    with engines[1].begin() as conn:
        conn.execute(text("INSERT INTO queue_messages (queue, group_id, body, sent_at, visible_at)"
                          " VALUES ('work.fifo', 'g', 'silent', 0, 0)"))
    written_at = time.perf_counter()
    messages, found_at = await asyncio.wait_for(waiting, 10)
    assert [m.body for m in messages] == ["silent"]
    assert found_at - written_at > 2.0


async def test_the_listener_reconnects_after_its_connection_is_killed(
    database: Engine, engines: list[Engine]
) -> None:
    receiver, sender = _queue(engines[0]), _queue(engines[1])
    started = time.perf_counter()
    first = asyncio.create_task(_timed_receive(receiver, wait_seconds=20))
    pid = await _wait_for_listener(database)
    with database.connect() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one()
    await _wait_for_listener(database, other_than=pid)
    await sender.send("after reconnect", group_id="g", dedup_id="d")
    [message], found_at = await asyncio.wait_for(first, 5)
    assert message.body == "after reconnect"
    # Before the receive's first poll after its start: the new listener's notification woke it.
    assert found_at - started < SLOW_POLL


_CHILD_SENDER = """
import asyncio, sys, time
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.queue import SqlQueue
queue = SqlQueue(make_engine(sys.argv[1]), "work.fifo", visibility_timeout=30, max_receives=3)
message_id = asyncio.run(queue.send("from another process", group_id="g", dedup_id="d"))
print(message_id, time.time())
"""


async def test_a_send_from_another_process_wakes_a_waiting_receive(
    database: Engine, engines: list[Engine]
) -> None:
    waiting = asyncio.create_task(_queue(engines[0]).receive(wait_seconds=20))
    await _wait_for_listener(database)
    url = database.url.render_as_string(hide_password=False)
    child = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", _CHILD_SENDER, url], capture_output=True, text=True, timeout=60,
    )
    assert child.returncode == 0, child.stderr
    message_id, sent_at = child.stdout.split()
    [message] = await asyncio.wait_for(waiting, 5)
    assert (message.message_id, message.body) == (message_id, "from another process")
    assert time.time() - float(sent_at) < 5  # well before the 10 s poll, however slow the child's exit
