"""The SQLite engine: one connection per process for a database file, so transactions hand over
through the pool instead of sleeping in SQLite's busy handler (measured in BENCHMARKS.md, accept path)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import text

from firmsift.adapters.sql_engine import make_engine


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
