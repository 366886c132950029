"""PostgreSQL LISTEN/NOTIFY wake-ups for the database queue: one background connection per
engine hears the sends of other processes and rings this process's doorbells."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from functools import partial
from weakref import WeakKeyDictionary

import psycopg
from psycopg import sql
from sqlalchemy import Engine, event

from firmsift.adapters.sql.queue_doorbell import Doorbells, doorbells_of
from firmsift.adapters.sql.queue_send_statements import notification_channel

log = logging.getLogger(__name__)

APPLICATION_NAME = "firmsift-queue-listener"  # how operators (and tests) find it in pg_stat_activity
_CHECK_EVERY = 0.25  # seconds between looks at new queues to LISTEN on and at a stop request
_FIRST_BACKOFF = 0.1
_MAX_BACKOFF = 10.0
# libpq keepalives, so a connection silently cut by the network fails instead of hearing nothing forever.
_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}

Connect = Callable[[], psycopg.Connection]


class SendListener:
    """A daemon thread with one autocommit connection that LISTENs on the channel of every
    queue this process waits on, and rings that queue's doorbell for each notification. A
    notification is only a hint: receivers still poll, since a lapsed lease notifies nobody."""

    def __init__(self, connect: Connect, doorbells: Doorbells) -> None:
        self._connect = connect
        self._doorbells = doorbells
        self._lock = threading.Lock()
        self._queues: set[str] = set()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._backoff = _FIRST_BACKOFF

    def watch(self, queue: str) -> None:
        """LISTEN for sends to `queue` from now on; starts the thread on first use (and again
        in a forked child, which inherits this object but not the thread)."""
        with self._lock:
            self._queues.add(queue)
            alive = self._thread is not None and self._thread.is_alive()
            if not alive and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._run, name=APPLICATION_NAME, daemon=True)
                self._thread.start()

    def stop(self) -> None:
        """Close the connection and end the thread within a moment; never blocks."""
        self._stopping.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                with self._connect() as conn:
                    self._serve(conn)
            except Exception as exc:  # noqa: BLE001 - whatever broke, receivers fall back to polling meanwhile
                if self._stopping.is_set():
                    break
                log.warning(
                    "queue listener lost its PostgreSQL connection (%s: %s); reconnecting in %.1f s",
                    type(exc).__name__, exc, self._backoff,
                )
                self._stopping.wait(self._backoff)
                self._backoff = min(self._backoff * 2, _MAX_BACKOFF)

    def _serve(self, conn: psycopg.Connection) -> None:
        listening: set[str] = set()
        while not self._stopping.is_set():
            with self._lock:
                new = self._queues - listening
            for queue in sorted(new):
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(notification_channel(queue))))
                listening.add(queue)
            if new:
                self._backoff = _FIRST_BACKOFF  # the server works again: the next loss retries quickly
            for queue in new:
                # A send committed before this LISTEN took effect notified nobody here (first
                # use, or while reconnecting): ring anyway, so waiting receivers look once more.
                self._doorbells.ring(queue)
            for notification in conn.notifies(timeout=_CHECK_EVERY):
                self._doorbells.ring(notification.payload)


# One listener per engine (one database), shared by every SqlQueue on it.
_listeners: WeakKeyDictionary[Engine, SendListener] = WeakKeyDictionary()
_listeners_lock = threading.Lock()


def listen_for_sends(engine: Engine, queue: str) -> None:
    """Make waiting receivers of `queue` on this PostgreSQL engine wake when another process
    (or another engine) sends to it. Cheap after the first call; connects in the background."""
    with _listeners_lock:
        listener = _listeners.get(engine)
        if listener is None:
            listener = SendListener(_connector(engine), doorbells_of(engine))
            _listeners[engine] = listener
            weakref.finalize(engine, listener.stop)
            if not event.contains(engine, "engine_disposed", _retire):
                event.listen(engine, "engine_disposed", _retire)
    listener.watch(queue)


def _retire(engine: Engine) -> None:
    # dispose() closes the engine's connections; the listener's goes too. A later receive on
    # the same engine starts a new one.
    with _listeners_lock:
        listener = _listeners.pop(engine, None)
    if listener is not None:
        listener.stop()


def _connector(engine: Engine) -> Connect:
    """How to open the listener's own connection: the engine's connection arguments, outside
    its pool (a LISTENing connection is held for good and must not use up a pooled one)."""
    args, kwargs = engine.dialect.create_connect_args(engine.url)
    options = {"application_name": APPLICATION_NAME, "connect_timeout": 10, **_KEEPALIVES, **kwargs}
    return partial(psycopg.connect, *args, **options, autocommit=True)
