"""SQLAlchemy engine creation for SQLite and PostgreSQL, with the SQLite settings a
multi-process service needs (WAL, busy timeout, immediate write transactions, and a file that
turns read-only refused before SQLite touches it: sqlite_writes.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url

from firmsift.adapters.sql.errors import database_errors, url_errors
from firmsift.adapters.sql.sqlite_writes import WriteGuard

T = TypeVar("T")

# The only PostgreSQL driver firmsift ships (psycopg 3); SQLAlchemy's default would be psycopg2.
POSTGRES_DRIVER = "postgresql+psycopg"
# Spellings people paste from other tools (Heroku, libpq docs) that name no driver.
_DRIVERLESS_POSTGRES = {"postgresql", "postgres"}
SQLITE_BUSY_TIMEOUT = 30  # seconds a transaction waits for another process's write lock
SQLITE_CACHE_KIB = 16 * 1024  # page cache per connection (one per process)


def database_url(url: str | URL) -> URL:
    """The URL as firmsift connects to it: a plain `postgresql://` (or `postgres://`) URL
    gets the psycopg 3 driver; anything else is returned unchanged. InvalidDatabaseUrl if it
    does not parse."""
    with url_errors():
        parsed = make_url(url)
    if parsed.drivername in _DRIVERLESS_POSTGRES:
        return parsed.set(drivername=POSTGRES_DRIVER)
    return parsed


def make_engine(url: str | URL, *, pool_size: int = 5, max_overflow: int = 10,
                sqlite_pool_timeout: float = 2 * SQLITE_BUSY_TIMEOUT) -> Engine:
    """An engine for `url`; nothing connects until the first query. The pool settings apply
    to PostgreSQL (SQLite files need no pool of their own); a thread waits up to
    `sqlite_pool_timeout` seconds for a SQLite file's one connection. InvalidDatabaseUrl for a URL
    that names no database SQLAlchemy can open."""
    parsed = database_url(url)
    with url_errors():
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(parsed, sqlite_pool_timeout)
        # Pre-ping replaces connections the server or a proxy closed while they sat in the pool.
        # Connect and keepalive limits so an unreachable server is an error in seconds, not a hang
        # of minutes while the kernel retries.
        connect_args = {"connect_timeout": 5, "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
                        "keepalives_count": 3, "tcp_user_timeout": 15000}
        return create_engine(parsed, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True,
                             connect_args=connect_args)


def _sqlite_engine(url: URL, pool_timeout: float) -> Engine:
    database = url.database
    pool: dict[str, float] = {}
    file: Path | None = None
    if database and database != ":memory:":
        file = Path(database).expanduser().absolute()  # as SQLite opens it: relative to the current directory
        file.parent.mkdir(parents=True, exist_ok=True)
        # One connection per process: every transaction takes the file's write lock (BEGIN
        # IMMEDIATE), so more connections only make threads wait in SQLite's busy handler, which
        # sleeps in growing steps (up to 100 ms) instead of handing over the moment the lock is free.
        pool = {"pool_size": 1, "max_overflow": 0, "pool_timeout": pool_timeout}
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT}, **pool)
    # SQLite writes the -shm file through a memory map while a connection is open: once the file
    # cannot be written (immutable, on a file system gone read-only) that write is a SIGBUS. Each
    # connection and each transaction are refused instead while the database is not writable.
    guard = WriteGuard(engine, file) if file is not None else None

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        # Let SQLAlchemy, not pysqlite, decide where transactions begin (see "begin").
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        # 16 MiB of page cache, not SQLite's 2 MiB: a batch writes 100,000 rows into indexes keyed
        # by random job ids, and a small cache spills them to the WAL and reads them back (~6% of
        # a 100,000-domain POST). Pages are only allocated as they are used.
        cursor.execute(f"PRAGMA cache_size={-SQLITE_CACHE_KIB}")
        cursor.close()
        if guard is not None:
            guard.after_connect(dbapi_connection)

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:  # type: ignore[no-untyped-def]
        if guard is not None:
            guard.before_transaction()  # each time: a file made read-only meanwhile is refused, not touched
        # BEGIN IMMEDIATE takes the write lock up front, so two processes never deadlock
        # upgrading read locks; the busy timeout makes the loser wait instead of failing.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


async def in_transaction(engine: Engine, work: Callable[[Connection], T]) -> T:
    """Run `work` in one transaction in a worker thread: SQLAlchemy Core is synchronous, and the
    event loop must keep serving heartbeats and requests meanwhile. A driver error leaves as the
    ports' DatabaseFailure (DatabaseUnavailable when the database could not be reached or used)."""

    def run() -> T:
        with database_errors(), engine.begin() as conn:
            return work(conn)

    return await asyncio.to_thread(run)


def open_engine(url: str, *, pool_size: int, max_overflow: int) -> Iterator[Engine]:
    """The database engine, for the Resource provider: disposed (its pooled connections closed)
    when the container's resources are shut down."""
    engine = make_engine(url, pool_size=pool_size, max_overflow=max_overflow)
    yield engine
    engine.dispose()
