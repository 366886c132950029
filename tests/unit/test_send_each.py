"""Sending several messages on a queue without a batch call: each in turn, and on a failure, how
many went before it."""

from __future__ import annotations

import pytest

from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.domain.work_messages import OutgoingMessage
from firmsift.ports.infrastructure_errors import QueuePartlySent, QueueUnavailable
from firmsift.ports.queue import send_each

pytestmark = pytest.mark.anyio
MESSAGES = [OutgoingMessage(f"m{i}", group_id=f"g{i}", dedup_id=f"d{i}") for i in range(5)]


async def test_a_failed_send_stops_the_rest_and_says_how_many_were_sent() -> None:
    sent: list[str] = []

    async def send(message: OutgoingMessage) -> None:
        if message.body == "m2":
            raise QueueUnavailable("the queue is down")
        sent.append(message.body)

    with pytest.raises(QueuePartlySent, match=r"the queue is down \(2 of 5 messages sent\)") as raised:
        await send_each(send, MESSAGES)
    assert raised.value.sent == 2 and sent == ["m0", "m1"]


async def test_any_other_error_is_not_a_queue_failure() -> None:
    async def send(message: OutgoingMessage) -> None:
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        await send_each(send, MESSAGES)


async def test_the_in_memory_queue_sends_many_as_it_sends_one() -> None:
    queue = InMemoryQueue("work.fifo", visibility_timeout=30, max_receives=None)
    queue.fail_next_send(QueueUnavailable("down"))
    with pytest.raises(QueuePartlySent) as raised:
        await queue.send_many(MESSAGES)
    assert raised.value.sent == 0
    await queue.send_many(MESSAGES)
    assert [m.body for m in await queue.receive(max_messages=10)] == [m.body for m in MESSAGES]
