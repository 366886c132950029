"""The database queue on a real PostgreSQL server, beyond the shared behaviour suite: concurrent
claims from many engines (FOR UPDATE SKIP LOCKED, one message in flight per group) and
LISTEN/NOTIFY wake-ups across engines and processes, including after the listener is cut off."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, event, text

from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.queue_listen import APPLICATION_NAME
from firmsift.ports.queue import QueueMessage
from tests.support.postgres import postgres_engine
from tests.support.waiting import HANG_SECONDS, eventually, no_hang

pytestmark = pytest.mark.anyio
HOUR = 3600.0  # a poll interval and a wait no test outlives: a receive that ends was woken


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


def _queue(engine: Engine, *, poll_interval: float = HOUR, **overrides: object) -> SqlQueue:
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
    with no_hang():
        await second
    [head] = await receiver.receive(max_messages=10)
    assert head.body == "first"
    assert await receiver.receive(max_messages=10) == []  # the group waits behind its head
    await receiver.delete(head.receipt)
    assert [m.body for m in await receiver.receive(max_messages=10)] == ["second"]


class Looks:
    """Counts the transactions on one engine: with only a receiver on it, each is a look at the
    queue (the listener has a connection of its own, outside the engine's pool)."""

    def __init__(self, engine: Engine) -> None:
        self.count = 0
        event.listen(engine, "begin", self._began)

    def _began(self, conn: object) -> None:
        self.count += 1


async def _listener_pid(database: Engine, *, other_than: int | None = None) -> int:
    """The server pid of the queue listener's connection, once it has connected."""
    query = text("SELECT pid FROM pg_stat_activity WHERE application_name = :name"
                 " AND datname = current_database() AND pid IS DISTINCT FROM :other")
    found: list[int] = []

    def connected() -> bool:
        with database.connect() as conn:
            pid = conn.execute(query, {"name": APPLICATION_NAME, "other": other_than}).scalar()
        found.extend([] if pid is None else [int(pid)])
        return bool(found)

    await eventually(connected, "the queue listener never connected")
    return found[0]


async def _listening(looks: Looks, count: int) -> None:
    """Until the receiver has looked `count` times. A waiting receive looks once when it starts
    and once more each time the listener (re)connects and LISTENs: it rings then, for a send it
    may have missed. So the second look means the LISTEN is in effect."""
    await eventually(lambda: looks.count >= count, f"the receive never looked {count} times")


async def test_a_send_on_another_engine_wakes_a_waiting_receive_at_once(engines: list[Engine]) -> None:
    receiver, sender = _queue(engines[0]), _queue(engines[1])
    looks = Looks(engines[0])
    # Polling every hour and waiting as long: found at all, the message was found by a wake-up.
    waiting = asyncio.create_task(receiver.receive(wait_seconds=HOUR))
    await _listening(looks, 2)
    await sender.send("wake", group_id="g", dedup_id="d")
    with no_hang():
        messages = await waiting
    assert [m.body for m in messages] == ["wake"]
    assert looks.count == 3  # engines do not share doorbells: the notification woke it


async def test_without_a_notification_a_waiting_receive_does_not_look_again(engines: list[Engine]) -> None:
    # The control for the test above: a row written behind the queue's back notifies nobody, so
    # the receive finds it only when something else wakes it: here a send to another group.
    receiver, sender = _queue(engines[0]), _queue(engines[1])
    looks = Looks(engines[0])
    waiting = asyncio.create_task(receiver.receive(max_messages=10, wait_seconds=HOUR))
    await _listening(looks, 2)
    with engines[1].begin() as conn:
        conn.execute(text("INSERT INTO queue_messages (queue, group_id, body, sent_at, visible_at)"
                          " VALUES ('work.fifo', 'g-silent', 'silent', 0, 0)"))
    await sender.send("wake", group_id="g", dedup_id="d")
    with no_hang():
        messages = await waiting
    # One look for both: had the silent row woken the receive, it would have come back alone.
    assert sorted(m.body for m in messages) == ["silent", "wake"]
    assert looks.count == 3


async def test_the_listener_reconnects_after_its_connection_is_killed(
    database: Engine, engines: list[Engine]
) -> None:
    receiver, sender = _queue(engines[0]), _queue(engines[1])
    looks = Looks(engines[0])
    first = asyncio.create_task(receiver.receive(wait_seconds=HOUR))
    await _listening(looks, 2)
    pid = await _listener_pid(database)
    with database.connect() as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one()
    await _listener_pid(database, other_than=pid)
    await _listening(looks, 3)  # the new connection LISTENs, and rings once
    await sender.send("after reconnect", group_id="g", dedup_id="d")
    with no_hang():
        [message] = await first
    assert message.body == "after reconnect"
    assert looks.count == 4  # the new listener's notification woke it: no poll came in an hour


_CHILD_SENDER = """
import asyncio, sys
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.queue import SqlQueue
queue = SqlQueue(make_engine(sys.argv[1]), "work.fifo", visibility_timeout=30, max_receives=3)
print(asyncio.run(queue.send("from another process", group_id="g", dedup_id="d")))
"""


async def test_a_send_from_another_process_wakes_a_waiting_receive(
    database: Engine, engines: list[Engine]
) -> None:
    looks = Looks(engines[0])
    waiting = asyncio.create_task(_queue(engines[0]).receive(wait_seconds=HOUR))
    await _listening(looks, 2)
    url = database.url.render_as_string(hide_password=False)
    child = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", _CHILD_SENDER, url], capture_output=True, text=True,
        timeout=HANG_SECONDS,
    )
    assert child.returncode == 0, child.stderr
    message_id = child.stdout.strip()
    with no_hang():  # the receive polls every hour: only the notification can end it sooner
        [message] = await waiting
    assert (message.message_id, message.body) == (message_id, "from another process")
