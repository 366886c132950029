"""In-process wake-ups for the database queue: a send (or, on PostgreSQL, a notification of
another process's send) rings the doorbell of its queue so this process's long-polls on it
return at once instead of at their next poll."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from weakref import WeakKeyDictionary

from sqlalchemy import Engine


class Doorbell:
    """Wakes this process's long-polls on one queue when a message is sent to it. Waiters
    may sit on different event loops and threads, so a ring goes through call_soon_threadsafe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    @contextlib.contextmanager
    def listening(self) -> Iterator[asyncio.Event]:
        """An event set by every ring while the block runs; register before checking the
        queue, so a send that lands between the check and the wait is not missed."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters.add(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                self._waiters.discard(entry)

    def ring(self) -> None:
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # that loop has closed; nobody is waiting
                loop.call_soon_threadsafe(event.set)


class Doorbells:
    """The doorbells of one database, by queue name. Held by the engine's notification
    listener too, which must not keep the engine itself alive."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_queue: dict[str, Doorbell] = {}

    def of(self, queue: str) -> Doorbell:
        with self._lock:
            return self._by_queue.setdefault(queue, Doorbell())

    def ring(self, queue: str) -> None:
        """Ring `queue`'s doorbell if anyone in this process ever listened for it."""
        with self._lock:
            bell = self._by_queue.get(queue)
        if bell is not None:
            bell.ring()


# Doorbells are per engine (one database) and queue name, shared by every SqlQueue and
# SqlReplyPublisher on that engine. Other processes are noticed by polling and, on
# PostgreSQL, by the LISTEN/NOTIFY listener (queue_listen.py).
_doorbells: WeakKeyDictionary[Engine, Doorbells] = WeakKeyDictionary()
_doorbells_lock = threading.Lock()


def doorbells_of(engine: Engine) -> Doorbells:
    """Every doorbell of this database, shared by everyone in the process."""
    with _doorbells_lock:
        return _doorbells.setdefault(engine, Doorbells())


def doorbell_for(engine: Engine, queue: str) -> Doorbell:
    """The doorbell of `queue` on this database, shared by everyone in the process."""
    return doorbells_of(engine).of(queue)
