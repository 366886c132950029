"""The SQLite engine: one connection per process for a database file, so transactions hand over
through the pool instead of sleeping in SQLite's busy handler (measured in BENCHMARKS.md, accept path);
and what leaves a transaction when the database fails: the ports' errors, the driver's as their cause."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from firmsift.adapters.sql.engine import SQLITE_CACHE_KIB, in_transaction, make_engine
from firmsift.ports.infrastructure_errors import DatabaseFailure, DatabaseUnavailable


def test_transactions_of_one_process_take_turns_on_one_connection(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'turns.db'}", pool_size=5, max_overflow=10)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE hits (n INTEGER)"))
    used: set[int] = set()
    lock = threading.Lock()

    def transaction(n: int) -> None:
        with engine.begin() as conn:
            with lock:
                used.add(id(conn.connection.dbapi_connection))
            conn.execute(text("INSERT INTO hits VALUES (:n)"), {"n": n})
            threading.Event().wait(0.001)

    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(transaction, range(100)))
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM hits")).scalar_one() == 100
    finally:
        engine.dispose()
    assert len(used) == 1  # the pool sizes asked for do not apply to a file: one connection, in turn


def test_a_connection_is_set_up_for_a_multi_process_service_and_batch_sized_writes(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'settings.db'}")
    try:
        with engine.connect() as conn:
            settings = [conn.exec_driver_sql(f"PRAGMA {name}").scalar_one()
                        for name in ("journal_mode", "foreign_keys", "synchronous", "cache_size")]
    finally:
        engine.dispose()
    assert settings == ["wal", 1, 1, -SQLITE_CACHE_KIB]  # synchronous 1: NORMAL; a negative cache size is in KiB


def test_driver_errors_leave_a_transaction_as_the_ports_errors_with_the_driver_error_as_cause(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'errors.db'}")
    try:
        with pytest.raises(DatabaseUnavailable, match="^no such table: nowhere$") as unusable:
            anyio.run(in_transaction, engine, lambda conn: conn.execute(text("SELECT * FROM nowhere")))
        assert isinstance(unusable.value.__cause__, OperationalError)

        anyio.run(in_transaction, engine, lambda conn: conn.execute(text("CREATE TABLE one (n INTEGER PRIMARY KEY)")))
        twice = text("INSERT INTO one VALUES (1)")
        with pytest.raises(DatabaseFailure) as refused:
            anyio.run(in_transaction, engine, lambda conn: [conn.execute(twice), conn.execute(twice)])
        assert not isinstance(refused.value, DatabaseUnavailable)  # refused, not unreachable: nothing to wait for
        assert isinstance(refused.value.__cause__, IntegrityError)
    finally:
        engine.dispose()


def test_a_pool_with_no_connection_free_in_time_leaves_a_transaction_as_database_unavailable(tmp_path: Path) -> None:
    """The file's pool is one connection with no overflow: while another holds it, a transaction
    waits the pool timeout, then fails as an outage the caller can wait out, not as SQLAlchemy's
    own TimeoutError (which the API would answer 500)."""
    engine = make_engine(f"sqlite:///{tmp_path / 'busy.db'}", sqlite_pool_timeout=0.1)
    try:
        pool_used_up = (r"^no database connection free: QueuePool limit of size 1 overflow 0 reached, "
                        r"connection timed out, timeout 0\.10$")
        with engine.connect(), pytest.raises(DatabaseUnavailable, match=pool_used_up) as busy:
            anyio.run(in_transaction, engine, lambda conn: conn.execute(text("SELECT 1")))
        assert isinstance(busy.value.__cause__, PoolTimeout)
        assert anyio.run(in_transaction, engine, lambda conn: conn.execute(text("SELECT 1")).scalar_one()) == 1
    finally:
        engine.dispose()
