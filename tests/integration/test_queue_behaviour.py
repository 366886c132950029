"""One WorkQueue behaviour suite (SQS FIFO semantics), run against every queue adapter."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from firmsift.domain.errors import StaleReceipt
from firmsift.domain.work_messages import OutgoingMessage
from tests.support.queue_backends import BACKENDS, Backend, Clock, OpenedQueue, QueueSettings, not_on
from tests.support.sqs_emulator import sqs_emulator
from tests.support.virtual_time import VIRTUAL_TIME_BACKEND, VirtualTimeLoop
from tests.support.waiting import no_hang

pytestmark = pytest.mark.anyio
HOUR = 3600.0  # a poll interval or a wait no test outlives
SQS_LONGEST_POLL = 20  # seconds: SQS's limit on a long poll


@pytest.fixture(scope="module")
def sqs_endpoint() -> Iterator[str]:
    with sqs_emulator() as endpoint:
        yield endpoint


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    reason = getattr(request.function, "not_on", {}).get(request.param)
    if reason:
        pytest.skip(reason)
    with BACKENDS[request.param](request, tmp_path) as opened_backend:
        yield opened_backend


@pytest.fixture
def clock(backend: Backend) -> Clock:
    return backend.clock


@pytest.fixture
def opened(backend: Backend) -> OpenedQueue:
    """A queue whose leases outlast the test: what it shows cannot hang on how fast the machine is."""
    return backend.open(QueueSettings(visibility_timeout=30, clock=backend.clock))


@pytest.fixture
def leasing(backend: Backend) -> OpenedQueue:
    """A queue whose leases lapse within the test (real seconds on SQS): for tests that let them."""
    return backend.open(QueueSettings(visibility_timeout=backend.visibility_timeout, clock=backend.clock))


async def test_send_receive_delete(opened: OpenedQueue) -> None:
    message_id = await opened.queue.send('{"job_id": "j1"}', group_id="j1", dedup_id="j1")
    [message] = await opened.queue.receive()
    assert (message.message_id, message.body, message.group_id, message.receive_count) == (
        message_id, '{"job_id": "j1"}', "j1", 1,
    )
    assert await opened.queue.approximate_counts() == {"visible": 0, "in_flight": 1}
    await opened.queue.delete(message.receipt)
    assert await opened.queue.receive() == []
    assert await opened.queue.approximate_counts() == {"visible": 0, "in_flight": 0}


async def test_send_many_sends_every_message_in_order_within_its_group(opened: OpenedQueue) -> None:
    # 23 messages: more than two SQS batch calls; 3 groups, so each call mixes groups.
    messages = [OutgoingMessage(f"m{i}", group_id=f"g{i % 3}", dedup_id=f"d{i}") for i in range(23)]
    await opened.queue.send_many(messages)
    await opened.queue.send_many([])  # nothing to send: no call, no error
    await opened.queue.send_many(messages[:2])  # the same dedup ids again, within the window: ignored
    received: dict[str, list[str]] = {}
    while batch := await opened.queue.receive(max_messages=10):
        for message in batch:
            received.setdefault(message.group_id, []).append(message.body)
            await opened.queue.delete(message.receipt)
    assert received == {f"g{g}": [f"m{i}" for i in range(g, 23, 3)] for g in range(3)}


async def test_fifo_order_within_a_group(opened: OpenedQueue) -> None:
    for body in ("a", "b", "c"):
        await opened.queue.send(body, group_id="g", dedup_id=body)
    received = []
    for _ in range(3):
        [message] = await opened.queue.receive(max_messages=10)
        received.append(message.body)
        await opened.queue.delete(message.receipt)
    assert received == ["a", "b", "c"]


async def test_a_group_waits_while_its_message_is_in_flight_but_others_flow(opened: OpenedQueue) -> None:
    # AWS may hand out several messages of one group in one batch (in order); the emulator and
    # the embedded queues give one per group. firmsift sends one message per job (= group).
    await opened.queue.send("g1-first", group_id="g1", dedup_id="1")
    await opened.queue.send("g1-second", group_id="g1", dedup_id="2")
    await opened.queue.send("g2-first", group_id="g2", dedup_id="3")
    first_batch = await opened.queue.receive(max_messages=10)
    assert [m.body for m in first_batch] == ["g1-first", "g2-first"]
    assert await opened.queue.receive(max_messages=10) == []
    await opened.queue.delete(first_batch[0].receipt)
    assert [m.body for m in await opened.queue.receive(max_messages=10)] == ["g1-second"]


async def test_a_message_not_deleted_in_time_comes_back_with_a_new_receipt(
    leasing: OpenedQueue, backend: Backend, clock: Clock
) -> None:
    await leasing.queue.send("job", group_id="g", dedup_id="d")
    [first] = await leasing.queue.receive()
    await clock.advance(backend.visibility_timeout - backend.margin)
    assert await leasing.queue.receive() == []
    await clock.advance(2 * backend.margin)
    [again] = await leasing.queue.receive()
    assert again.message_id == first.message_id
    assert again.receipt != first.receipt
    assert again.receive_count == first.receive_count + 1 == 2


async def test_a_superseded_receipt_never_deletes_the_message(
    leasing: OpenedQueue, backend: Backend, clock: Clock
) -> None:
    await leasing.queue.send("job", group_id="g", dedup_id="d")
    [first] = await leasing.queue.receive()
    await clock.advance(backend.visibility_timeout + backend.margin)
    [current] = await leasing.queue.receive()
    # The embedded queues refuse it; SQS may answer success and keep the message (next test).
    with suppress(StaleReceipt):
        await leasing.queue.delete(first.receipt)
    assert await leasing.queue.approximate_counts() == {"visible": 0, "in_flight": 1}
    with pytest.raises(StaleReceipt):
        await leasing.queue.change_visibility(first.receipt, 60)
    await leasing.queue.delete(current.receipt)
    assert await leasing.queue.approximate_counts() == {"visible": 0, "in_flight": 0}


@not_on("sqs", "AWS's DeleteMessage contract: with an outdated receipt 'the request succeeds, but the"
               " message might not be deleted' (the emulator always succeeds); the test above holds instead")
async def test_a_superseded_receipt_is_rejected(leasing: OpenedQueue, backend: Backend, clock: Clock) -> None:
    await leasing.queue.send("job", group_id="g", dedup_id="d")
    [first] = await leasing.queue.receive()
    await clock.advance(backend.visibility_timeout + backend.margin)
    [current] = await leasing.queue.receive()
    with pytest.raises(StaleReceipt):
        await leasing.queue.delete(first.receipt)
    await leasing.queue.delete(current.receipt)


@not_on("sqs", "AWS rejects an expired receipt on a FIFO queue with InvalidParameterValue 'The receipt"
               " handle has expired' (mapped to StaleReceipt, see test_sqs_queue.py), but the emulator"
               " keeps an expired receipt valid until the message is received again")
async def test_an_expired_receipt_is_rejected_and_the_message_stays(
    leasing: OpenedQueue, backend: Backend, clock: Clock
) -> None:
    await leasing.queue.send("job", group_id="g", dedup_id="d")
    [message] = await leasing.queue.receive()
    await clock.advance(backend.visibility_timeout + backend.margin)
    with pytest.raises(StaleReceipt):
        await leasing.queue.delete(message.receipt)
    with pytest.raises(StaleReceipt):
        await leasing.queue.change_visibility(message.receipt, 60)
    assert [m.body for m in await leasing.queue.receive()] == ["job"]


async def test_an_unknown_receipt_is_rejected(opened: OpenedQueue) -> None:
    with pytest.raises(StaleReceipt):
        await opened.queue.change_visibility("no-such-receipt", 60)


@not_on("sqs", "AWS answers ReceiptHandleIsInvalid (mapped to StaleReceipt, see test_sqs_queue.py);"
               " the emulator accepts any receipt on DeleteMessage")
async def test_deleting_with_an_unknown_receipt_is_rejected(opened: OpenedQueue) -> None:
    with pytest.raises(StaleReceipt):
        await opened.queue.delete("no-such-receipt")


async def test_change_visibility_extends_the_hiding_and_keeps_the_receipt_valid(
    leasing: OpenedQueue, backend: Backend, clock: Clock
) -> None:
    await leasing.queue.send("job", group_id="g", dedup_id="d")
    [message] = await leasing.queue.receive()
    await leasing.queue.change_visibility(message.receipt, 2 * backend.visibility_timeout)
    await clock.advance(2 * backend.visibility_timeout - backend.margin)  # well past the first lease
    assert await leasing.queue.receive() == []
    await leasing.queue.delete(message.receipt)
    await clock.advance(2 * backend.margin)  # past the extended lease: gone, not hidden
    assert await leasing.queue.receive() == []


async def test_change_visibility_to_zero_releases_the_message_at_once(opened: OpenedQueue) -> None:
    await opened.queue.send("job", group_id="g", dedup_id="d")
    [message] = await opened.queue.receive()
    await opened.queue.change_visibility(message.receipt, 0)
    [again] = await opened.queue.receive()
    assert (again.message_id, again.receive_count) == (message.message_id, 2)


async def test_a_message_received_max_receives_times_goes_to_the_dead_letter_queue(
    leasing: OpenedQueue, backend: Backend, clock: Clock
) -> None:
    poison_id = await leasing.queue.send("poison", group_id="g", dedup_id="1")
    await leasing.queue.send("next", group_id="g", dedup_id="2")
    for attempt in (1, 2, 3):
        [message] = await leasing.queue.receive()
        assert (message.body, message.receive_count) == ("poison", attempt)
        await clock.advance(backend.visibility_timeout + backend.margin)
    # The fourth receive moves the poison message away and its group flows again.
    assert [m.body for m in await leasing.queue.receive()] == ["next"]
    [dead] = await leasing.dead_letters.receive(max_messages=10)
    assert (dead.message_id, dead.body, dead.group_id) == (poison_id, "poison", "g")
    if backend.dead_letters_restart_receive_count:
        assert dead.receive_count == 1
    else:
        assert dead.receive_count > 3  # the source queue's receives carried over
    assert await leasing.queue.approximate_counts() == {"visible": 0, "in_flight": 1}


async def test_a_duplicate_is_ignored_even_after_delete(opened: OpenedQueue) -> None:
    first_id = await opened.queue.send("first", group_id="g", dedup_id="job-1")
    assert await opened.queue.send("second", group_id="g", dedup_id="job-1") == first_id
    [message] = await opened.queue.receive(max_messages=10)
    assert message.body == "first"
    await opened.queue.delete(message.receipt)
    assert await opened.queue.send("third", group_id="g", dedup_id="job-1") == first_id
    assert await opened.queue.receive() == []


@not_on("sqs", "AWS fixes the FIFO deduplication interval at 5 minutes of real time, which a test"
               " cannot skip over")
async def test_the_dedup_window_lasts_its_length_and_no_longer(opened: OpenedQueue, clock: Clock) -> None:
    first_id = await opened.queue.send("first", group_id="g", dedup_id="job-1")
    [message] = await opened.queue.receive(max_messages=10)
    await opened.queue.delete(message.receipt)
    await clock.advance(299)
    assert await opened.queue.send("third", group_id="g", dedup_id="job-1") == first_id
    assert await opened.queue.receive() == []
    await clock.advance(2)
    assert await opened.queue.send("fourth", group_id="g", dedup_id="job-1") != first_id
    assert [m.body for m in await opened.queue.receive()] == ["fourth"]


async def test_receive_rejects_a_batch_size_sqs_would_reject(opened: OpenedQueue) -> None:
    for size in (0, 11):
        with pytest.raises(ValueError):
            await opened.queue.receive(max_messages=size)


async def test_a_long_poll_wakes_promptly_on_a_send_from_another_task(
    backend: Backend, request: pytest.FixtureRequest,
) -> None:
    # Polling every hour and waiting as long: a receive that returns the message sent meanwhile
    # was woken by the send (no_hang fails it long before any poll). SQS long-polls at most 20 s,
    # and the waking is the service's: there the receive shows only that waiting holds up no
    # other task (a blocked event loop would send only after an empty receive).
    opened = backend.open(QueueSettings(poll_interval=HOUR, clock=backend.clock))
    longest = SQS_LONGEST_POLL if request.node.callspec.params["backend"] == "sqs" else HOUR

    async def send_soon() -> None:
        await asyncio.sleep(0.1)  # most likely once the receive waits; if not, it finds the message at once
        await opened.other_handle.send("wake", group_id="g", dedup_id="d")

    sender = asyncio.create_task(send_soon())
    with no_hang():
        messages = await opened.queue.receive(wait_seconds=longest)
    await sender
    assert [m.body for m in messages] == ["wake"]


class Jumps:
    """The waits of a virtual-time loop, each as the jump of its clock: a real receive would
    have slept that long (see tests/support/virtual_time.py)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seconds: list[float] = []
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualTimeLoop)
        advance = loop.advance

        def record(seconds: float) -> None:
            self.seconds.append(seconds)
            advance(seconds)

        monkeypatch.setattr(loop, "advance", record)


@not_on("sqs", "SQS times its long polls itself, in real seconds; the wait the adapter asks for is checked in"
               " test_sqs_queue.py")
@pytest.mark.parametrize("anyio_backend", [VIRTUAL_TIME_BACKEND])
async def test_an_empty_long_poll_waits_out_its_time_without_spinning(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, anyio_backend: object,
) -> None:
    # A lease far longer than the poll, so the in-flight message cannot end the poll early; a
    # poll interval far longer too, so a poll that overstays its time until the next poll shows.
    opened = backend.open(QueueSettings(visibility_timeout=30, poll_interval=10.0, clock=backend.clock))
    await opened.queue.send("in flight", group_id="g", dedup_id="d")
    await opened.queue.receive()  # an in-flight message must not make the poll spin either
    jumps = Jumps(monkeypatch)
    assert await opened.queue.receive(wait_seconds=1.0) == []
    assert jumps.seconds == [1.0]  # one wait, of the whole second: not cut short, not spun, not overstayed


@not_on("sqs", "SQS times leases and long polls itself, in real seconds")
@pytest.mark.parametrize("anyio_backend", [VIRTUAL_TIME_BACKEND])
async def test_a_long_poll_wakes_when_an_in_flight_message_times_out(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, anyio_backend: object,
) -> None:
    # Leases on the loop's virtual clock (read from the SQL queue's threads too): the receive's
    # waits and the lease's lapse on one timeline.
    timeout = backend.shortest_real_timeout
    opened = backend.open(QueueSettings(visibility_timeout=timeout, poll_interval=10.0,
                                        clock=asyncio.get_running_loop().time))
    await opened.queue.send("job", group_id="g", dedup_id="d")
    await opened.queue.receive()
    jumps = Jumps(monkeypatch)
    [again] = await opened.queue.receive(wait_seconds=5)
    assert again.receive_count == 2
    # Woken when the lease lapsed: not at the poll's end (5 s) or its next poll (10 s).
    assert sum(jumps.seconds) == pytest.approx(timeout)
