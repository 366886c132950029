"""SQLAlchemy engine creation for SQLite and PostgreSQL, with the SQLite settings a
multi-process service needs (WAL, busy timeout, immediate write transactions)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url


def make_engine(url: str, *, pool_size: int = 5, max_overflow: int = 10) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    return create_engine(url, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True)


def _sqlite_engine(url: str) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        # Let SQLAlchemy, not pysqlite, decide where transactions begin (see "begin").
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection) -> None:  # type: ignore[no-untyped-def]
        # BEGIN IMMEDIATE takes the write lock up front, so two processes never deadlock
        # upgrading read locks; the busy timeout makes the loser wait instead of failing.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine
