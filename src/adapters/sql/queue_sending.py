"""Sending to a database queue by name, which the work queue and the reply publisher share: one
transaction off the event loop, a send retried once after a concurrent duplicate; and the
ReplyPublisher that writes to any queue in the same table."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from firmsift.adapters.sql.queue_doorbell import doorbell_for
from firmsift.adapters.sql.queue_send_statements import insert_message
from firmsift.ports.infrastructure_errors import QueueUnavailable

T = TypeVar("T")


async def transact(engine: Engine, work: Callable[[Connection], T], failure: str) -> T:
    """Run `work` in one transaction off the event loop; database errors become QueueUnavailable."""

    def run() -> T:
        with engine.begin() as conn:
            return work(conn)

    try:
        return await asyncio.to_thread(run)
    except SQLAlchemyError as exc:
        raise QueueUnavailable(f"{failure}: {getattr(exc, 'orig', None) or exc}") from exc


async def send_to_queue(
    engine: Engine, queue: str, body: str, *, group_id: str, dedup_id: str, now: float, dedup_window: float
) -> str:
    """Store the message durably in `queue` and return its id (the first one's for a duplicate),
    then wake this process's receivers on that queue."""
    store = partial(
        insert_message, queue=queue, body=body, group_id=group_id,
        dedup_id=dedup_id, now=now, dedup_window=dedup_window,
    )
    failure = f"queue {queue!r} could not durably accept the message"
    try:
        message_id = await transact(engine, store, failure)
    except QueueUnavailable as exc:
        if not isinstance(exc.__cause__, IntegrityError):
            raise
        # A concurrent send (PostgreSQL) took the same dedup id first; retrying sees its row.
        message_id = await transact(engine, store, failure)
    doorbell_for(engine, queue).ring()
    return str(message_id)


class SqlReplyPublisher:
    """A ReplyPublisher writing to any named queue in the same table, where a SqlQueue (or
    `firmsift replies`) on that name reads it."""

    def __init__(
        self, engine: Engine, *, dedup_window: float = 300, clock: Callable[[], float] = time.time
    ) -> None:
        self._engine = engine
        self._dedup_window = dedup_window
        self._clock = clock

    async def publish(self, queue: str, body: str, *, group_id: str, dedup_id: str) -> None:
        await send_to_queue(
            self._engine, queue, body, group_id=group_id, dedup_id=dedup_id,
            now=self._clock(), dedup_window=self._dedup_window,
        )
