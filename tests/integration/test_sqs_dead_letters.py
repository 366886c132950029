"""The dead-letter tools on the emulator: a real redrive policy dead-letters a message, the listing
shows it and leaves it, a redrive moves it back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from firmsift.adapters.sqs_dead_letters import SqsDeadLetters
from firmsift.adapters.sqs_queue import SqsQueue
from tests.support.sqs_emulator import fresh_queue, sqs_client, sqs_emulator

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with sqs_emulator() as url:
        yield url


@pytest.fixture
def client(endpoint: str) -> Iterator[Any]:
    sqs = sqs_client(endpoint)
    yield sqs
    sqs.close()


@pytest.fixture
def dead_lettering(client: Any) -> tuple[SqsQueue, SqsQueue, SqsDeadLetters]:
    """A work queue dead-lettering after 2 receives (the emulator applies the redrive policy)."""
    _, dead_url = fresh_queue(client, "jobs-dlq.fifo")
    dead_arn = client.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": 2})
    _, url = fresh_queue(client, "jobs.fifo", {"RedrivePolicy": redrive})
    tools = SqsDeadLetters(client, queue=url, dead_letter_queue=dead_url, peek_seconds=5)
    return SqsQueue(client, url, visibility_timeout=30), SqsQueue(client, dead_url, visibility_timeout=30), tools


async def _fail(queue: SqsQueue, times: int) -> None:
    """Receive and give up `times` times, as a worker crashing on the job would (released at once)."""
    for _ in range(times):
        [message] = await queue.receive()
        await queue.change_visibility(message.receipt, 0)


async def test_a_message_received_too_often_is_listed_and_redriven(
    dead_lettering: tuple[SqsQueue, SqsQueue, SqsDeadLetters],
) -> None:
    queue, dead_queue, tools = dead_lettering
    message_id = await queue.send('{"job_id": "j1"}', group_id="j1", dedup_id="j1")
    await _fail(queue, 2)
    assert await queue.receive() == []  # the third receive moved it to the dead-letter queue

    listed = await tools.peek(max_messages=10)
    assert [(d.message_id, d.body, d.group_id, d.receipt) for d in listed] == [
        (message_id, '{"job_id": "j1"}', "j1", "")]
    assert [d.message_id for d in await tools.peek(max_messages=10)] == [message_id]  # peeking left it there

    assert await tools.redrive(max_messages=10) == 1
    assert await dead_queue.approximate_counts() == {"visible": 0, "in_flight": 0}
    [back] = await queue.receive()
    assert (back.body, back.group_id, back.receive_count) == ('{"job_id": "j1"}', "j1", 1)


async def test_a_limited_redrive_moves_only_that_many(
    dead_lettering: tuple[SqsQueue, SqsQueue, SqsDeadLetters],
) -> None:
    queue, dead_queue, tools = dead_lettering
    for job in ("j1", "j2", "j3"):
        await queue.send(job, group_id=job, dedup_id=job)
    for _ in range(2):
        for message in await queue.receive(max_messages=10):
            await queue.change_visibility(message.receipt, 0)
    assert await queue.receive(max_messages=10) == []
    assert await dead_queue.approximate_counts() == {"visible": 3, "in_flight": 0}

    assert await tools.redrive(max_messages=2) == 2
    assert sorted(m.body for m in await queue.receive(max_messages=10)) == ["j1", "j2"]
    assert [d.body for d in await tools.peek(max_messages=10)] == ["j3"]
