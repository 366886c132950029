"""The embedded work queue: SQS FIFO semantics kept in the service's own database (SQLite or
PostgreSQL). Its sends, and the reply publisher's, are in queue_sending.py.

Waiting receivers wake on a send from this process (doorbell), on PostgreSQL on a send from any
process (LISTEN/NOTIFY), and otherwise at every poll_interval."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from functools import partial

from sqlalchemy import Connection, Engine

from firmsift.adapters.sql.queue_doorbell import doorbell_for
from firmsift.adapters.sql.queue_receive_statements import (
    Claim,
    claim_messages,
    count_messages,
    delete_in_flight,
    peek_messages,
    set_visible_at,
)
from firmsift.adapters.sql.queue_sending import send_to_queue, transact
from firmsift.adapters.sql.queue_send_statements import (
    insert_fresh_group_messages,
    insert_message,
    purge_expired_dedup_ids,
)
from firmsift.domain.errors import StaleReceipt
from firmsift.domain.work_messages import OutgoingMessage
from firmsift.ports.queue import MAX_BATCH, QueueMessage, send_each

_SHORTEST_PAUSE = 0.01  # floor on a long-poll pause, so clock jitter cannot turn it into a spin


class SqlQueue:
    """A WorkQueue on the queue_messages table. Visibility and dedup windows follow `clock`
    (wall-clock seconds, shared by every process on the database); long-poll waits are real time."""

    def __init__(
        self,
        engine: Engine,
        queue_name: str,
        *,
        visibility_timeout: float,
        max_receives: int | None,
        dead_letter_queue: str | None = None,
        poll_interval: float = 0.5,
        dedup_window: float = 300,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # A zero timeout would let one receive deliver the same message twice.
        if visibility_timeout <= 0:
            raise ValueError("visibility_timeout must be positive")
        if max_receives is not None and max_receives < 1:
            raise ValueError("max_receives must be at least 1 (or None for no dead-letter queue)")
        if poll_interval <= 0:
            raise ValueError("poll_interval must be positive")
        self._engine = engine
        self.queue_name = queue_name
        self.dead_letter_queue = dead_letter_queue or f"{queue_name}-dlq"
        self._visibility_timeout = visibility_timeout
        self._max_receives = max_receives
        self._poll_interval = poll_interval
        self._dedup_window = dedup_window
        self._clock = clock
        self._doorbell = doorbell_for(engine, queue_name)

    @property
    def engine(self) -> Engine:
        """The database the queue lives in (an intake writes jobs in the same transaction)."""
        return self._engine

    async def send(self, body: str, *, group_id: str, dedup_id: str) -> str:
        """Store the message durably and return its id (the first one's for a duplicate)."""
        return await send_to_queue(
            self._engine, self.queue_name, body, group_id=group_id,
            dedup_id=dedup_id, now=self._clock(), dedup_window=self._dedup_window,
        )

    async def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        """Each message in its own transaction, as `send` stores it (a batch writes its messages
        with its jobs instead: enqueue_fresh_groups_in)."""
        await send_each(lambda m: self.send(m.body, group_id=m.group_id, dedup_id=m.dedup_id), messages)

    def enqueue_in(self, conn: Connection, body: str, *, group_id: str, dedup_id: str) -> str:
        """Write a message as one step of the caller's open transaction on this queue's engine,
        so it commits or rolls back with the caller's other rows; returns its id. Database
        errors propagate to the caller, who owns the transaction. Call wake_receivers() after
        the commit."""
        message_id = insert_message(
            conn, queue=self.queue_name, body=body, group_id=group_id, dedup_id=dedup_id,
            now=self._clock(), dedup_window=self._dedup_window,
        )
        return str(message_id)

    def enqueue_fresh_groups_in(self, conn: Connection, messages: list[tuple[str, str]]) -> None:
        """Write (body, group id) messages, each the first of a new group created in the caller's
        open transaction (dedup id = group id), as enqueue_in would one by one, in a few
        statements. Call purge_expired_in() once in that transaction, wake_receivers() after it."""
        insert_fresh_group_messages(conn, queue=self.queue_name, messages=messages, now=self._clock(),
                                    dedup_window=self._dedup_window)

    def purge_expired_in(self, conn: Connection) -> None:
        """Delete the queue's expired dedup ids in the caller's transaction, as each enqueue_in does."""
        purge_expired_dedup_ids(conn, queue=self.queue_name, now=self._clock())

    def wake_receivers(self) -> None:
        """Wake this process's receivers waiting on the queue after a committed enqueue_in
        (other processes hear the PostgreSQL notification, or poll)."""
        self._doorbell.ring()

    async def receive(self, *, max_messages: int = 1, wait_seconds: float = 0.0) -> list[QueueMessage]:
        """Return up to max_messages group heads (one per group) as soon as any is
        available, or [] once wait_seconds have passed."""
        if not 1 <= max_messages <= MAX_BATCH:
            raise ValueError(f"max_messages must be between 1 and {MAX_BATCH}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        claim_up_to = partial(self._claim, max_messages)
        with self._doorbell.listening() as rung:
            while True:
                rung.clear()  # cleared before the check, so a send during it still wakes us
                claim = await transact(self._engine, claim_up_to, self._failure("receive"))
                if claim.dead_lettered:
                    doorbell_for(self._engine, self.dead_letter_queue).ring()
                if claim.delivered:
                    return claim.delivered
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return []
                self._hear_other_processes()
                pause = min(remaining, self._poll_interval)
                if claim.next_visible_at is not None:
                    # An in-flight message whose timeout lapses is deliverable without any send.
                    pause = min(pause, max(claim.next_visible_at - self._clock(), _SHORTEST_PAUSE))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(rung.wait(), pause)

    def _hear_other_processes(self) -> None:
        if self._engine.dialect.name == "postgresql":
            # Imported here: psycopg is only loaded by processes that run on PostgreSQL.
            from firmsift.adapters.sql.queue_listen import listen_for_sends

            listen_for_sends(self._engine, self.queue_name)

    def _claim(self, max_messages: int, conn: Connection) -> Claim:
        return claim_messages(
            conn, queue=self.queue_name, now=self._clock(), limit=max_messages,
            visibility_timeout=self._visibility_timeout, max_receives=self._max_receives,
            dead_letter_queue=self.dead_letter_queue,
        )

    async def delete(self, receipt: str) -> None:
        """Acknowledge a message; StaleReceipt unless `receipt` is current and still in flight."""

        def remove(conn: Connection) -> bool:
            return delete_in_flight(conn, queue=self.queue_name, receipt=receipt, now=self._clock())

        if not await transact(self._engine, remove, self._failure("delete")):
            raise StaleReceipt(self._stale(receipt))

    async def change_visibility(self, receipt: str, timeout_seconds: float) -> None:
        """Hide the message for timeout_seconds from now (0 makes it visible at once)."""
        if timeout_seconds < 0:
            raise ValueError("timeout_seconds must not be negative")

        def move(conn: Connection) -> bool:
            now = self._clock()
            later = now + timeout_seconds
            return set_visible_at(conn, queue=self.queue_name, receipt=receipt, now=now, visible_at=later)

        if not await transact(self._engine, move, self._failure("change visibility")):
            raise StaleReceipt(self._stale(receipt))

    async def approximate_counts(self) -> dict[str, int]:
        """{"visible": n, "in_flight": m} for this queue, for operators and tests."""

        def count(conn: Connection) -> dict[str, int]:
            return count_messages(conn, queue=self.queue_name, now=self._clock())

        return await transact(self._engine, count, self._failure("count"))

    async def read_messages(
        self, *, limit: int = 10, wait_seconds: float = 0.0, consume: bool = True
    ) -> list[QueueMessage]:
        """Read up to `limit` messages for a person or a script (`firmsift replies`): with
        `consume`, receive and delete them (waiting up to wait_seconds for the first); without,
        peek at the oldest without changing anything."""
        if not consume:
            work = partial(peek_messages, queue=self.queue_name, limit=limit)
            return await transact(self._engine, work, self._failure("peek"))
        taken: list[QueueMessage] = []
        while len(taken) < limit:
            batch = await self.receive(
                max_messages=min(MAX_BATCH, limit - len(taken)), wait_seconds=0.0 if taken else wait_seconds
            )
            if not batch:
                break
            for message in batch:
                await self.delete(message.receipt)
            taken.extend(batch)
        return taken

    def _failure(self, action: str) -> str:
        return f"queue {self.queue_name!r}: could not {action}"

    def _stale(self, receipt: str) -> str:
        return (
            f"receipt {receipt!r} holds no message in flight on queue {self.queue_name!r}"
            " (expired, superseded or already deleted)"
        )
