"""In-memory FIFO work queue and reply publisher: the fakes the domain's unit tests run on,
held to the same behaviour suite as the database queue."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from firmsift.domain.errors import StaleReceipt
from firmsift.domain.work_messages import OutgoingMessage
from firmsift.ports.queue import MAX_BATCH, QueueMessage, send_each

_SHORTEST_PAUSE = 0.01  # floor on a long-poll pause, so clock jitter cannot turn it into a spin


@dataclass
class _Stored:
    message_id: str
    group_id: str
    body: str
    visible_at: float
    receive_count: int = 0
    receipt: str | None = None


class InMemoryQueue:
    """A WorkQueue in a dict, with SQS FIFO semantics. With max_receives set, messages
    received that many times move to `dead_letters`, itself an InMemoryQueue to receive from."""

    def __init__(
        self,
        queue_name: str,
        *,
        visibility_timeout: float,
        max_receives: int | None,
        dead_letter_queue: str | None = None,
        dedup_window: float = 300,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if visibility_timeout <= 0:
            raise ValueError("visibility_timeout must be positive")
        if max_receives is not None and max_receives < 1:
            raise ValueError("max_receives must be at least 1 (or None for no dead-letter queue)")
        self.queue_name = queue_name
        self._visibility_timeout = visibility_timeout
        self._max_receives = max_receives
        self._dedup_window = dedup_window
        self._clock = clock
        self._messages: dict[str, _Stored] = {}  # insertion order is FIFO order
        self._dedup: dict[str, tuple[str, float]] = {}  # dedup id -> (first message id, expires at)
        self._send_failures: list[Exception] = []
        # Replaced on every send, so each waiter holds the event of the next send.
        self._next_send = asyncio.Event()
        self.dead_letters: InMemoryQueue | None = None
        if max_receives is not None:
            self.dead_letters = InMemoryQueue(
                dead_letter_queue or f"{queue_name}-dlq", visibility_timeout=visibility_timeout,
                max_receives=None, dedup_window=dedup_window, clock=clock,
            )

    def fail_next_send(self, error: Exception) -> None:
        """Make the next send raise `error` (e.g. QueueUnavailable), as a broken queue would."""
        self._send_failures.append(error)

    async def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        await send_each(lambda m: self.send(m.body, group_id=m.group_id, dedup_id=m.dedup_id), messages)

    async def send(self, body: str, *, group_id: str, dedup_id: str) -> str:
        """Store the message and return its id (the first one's for a duplicate)."""
        if self._send_failures:
            raise self._send_failures.pop(0)
        now = self._clock()
        self._dedup = {key: seen for key, seen in self._dedup.items() if seen[1] > now}
        if dedup_id in self._dedup:
            return self._dedup[dedup_id][0]
        stored = _Stored(message_id=uuid.uuid4().hex, group_id=group_id, body=body, visible_at=now)
        self._messages[stored.message_id] = stored
        self._dedup[dedup_id] = (stored.message_id, now + self._dedup_window)
        self._wake_receivers()
        return stored.message_id

    async def receive(self, *, max_messages: int = 1, wait_seconds: float = 0.0) -> list[QueueMessage]:
        """Return up to max_messages group heads (one per group) as soon as any is
        available, or [] once wait_seconds (real time) have passed."""
        if not 1 <= max_messages <= MAX_BATCH:
            raise ValueError(f"max_messages must be between 1 and {MAX_BATCH}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while True:
            next_send = self._next_send
            delivered = self._claim(max_messages)
            if delivered:
                return delivered
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            pause = remaining
            in_flight = [m.visible_at for m in self._messages.values() if m.visible_at > self._clock()]
            if in_flight:
                # An in-flight message whose timeout lapses is deliverable without any send.
                pause = min(pause, max(min(in_flight) - self._clock(), _SHORTEST_PAUSE))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(next_send.wait(), pause)

    def _claim(self, max_messages: int) -> list[QueueMessage]:
        now = self._clock()
        delivered: list[QueueMessage] = []
        seen_groups: set[str] = set()  # a group's first message decides for the whole group
        for stored in list(self._messages.values()):
            if len(delivered) == max_messages:
                break
            if stored.group_id in seen_groups:
                continue
            exhausted = self._max_receives is not None and stored.receive_count >= self._max_receives
            if stored.visible_at <= now and exhausted:
                # Moved, not delivered; the next message of its group becomes the head.
                del self._messages[stored.message_id]
                assert self.dead_letters is not None
                self.dead_letters._adopt(stored, now)
                continue
            seen_groups.add(stored.group_id)
            if stored.visible_at > now:
                continue  # in flight: it blocks its group
            stored.receipt = uuid.uuid4().hex
            stored.receive_count += 1
            stored.visible_at = now + self._visibility_timeout
            delivered.append(
                QueueMessage(
                    stored.message_id, stored.body, stored.receipt, stored.receive_count, stored.group_id
                )
            )
        return delivered

    def _adopt(self, stored: _Stored, now: float) -> None:
        """Take a dead-lettered message: same id, body and group; no receipt; visible now."""
        adopted = _Stored(stored.message_id, stored.group_id, stored.body, visible_at=now)
        self._messages[adopted.message_id] = adopted
        self._wake_receivers()

    def _wake_receivers(self) -> None:
        self._next_send.set()
        self._next_send = asyncio.Event()

    async def delete(self, receipt: str) -> None:
        """Acknowledge a message; StaleReceipt unless `receipt` is current and still in flight."""
        del self._messages[self._in_flight(receipt).message_id]

    async def change_visibility(self, receipt: str, timeout_seconds: float) -> None:
        """Hide the message for timeout_seconds from now (0 makes it visible at once)."""
        if timeout_seconds < 0:
            raise ValueError("timeout_seconds must not be negative")
        self._in_flight(receipt).visible_at = self._clock() + timeout_seconds

    def _in_flight(self, receipt: str) -> _Stored:
        now = self._clock()
        for stored in self._messages.values():
            if stored.receipt == receipt and stored.visible_at > now:
                return stored
        raise StaleReceipt(f"receipt {receipt!r} is not current on queue {self.queue_name!r}")

    async def approximate_counts(self) -> dict[str, int]:
        """{"visible": n, "in_flight": m}, as SqlQueue reports them."""
        now = self._clock()
        in_flight = sum(1 for m in self._messages.values() if m.visible_at > now)
        return {"visible": len(self._messages) - in_flight, "in_flight": in_flight}


@dataclass(frozen=True)
class PublishedReply:
    queue: str
    body: str
    group_id: str
    dedup_id: str


class InMemoryReplyPublisher:
    """A ReplyPublisher that records what was published, in order, in `published`."""

    def __init__(self) -> None:
        self.published: list[PublishedReply] = []
        self._failures: list[Exception] = []

    def fail_next_publish(self, error: Exception) -> None:
        """Make the next publish raise `error` (e.g. QueueUnavailable)."""
        self._failures.append(error)

    async def publish(self, queue: str, body: str, *, group_id: str, dedup_id: str) -> None:
        if self._failures:
            raise self._failures.pop(0)
        self.published.append(PublishedReply(queue, body, group_id, dedup_id))
