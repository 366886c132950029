"""Writing many rows in one statement through the driver's executemany: for a batch's tens of
thousands of rows, SQLAlchemy's per-row parameter processing costs as much as the database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """INSERT every row (each with the same keys: column names of `table`) in the caller's
    transaction. Values go to the driver as they are: None, bool, int, float and str only."""
    if not rows:
        return
    columns = [table.c[name].name for name in rows[0]]  # a KeyError for a name that is no column
    # Named parameters, so the rows go to the driver as they are: sqlite3's `:name`, psycopg's `%(name)s`.
    marks = [f":{name}" if conn.dialect.paramstyle in ("qmark", "named") else f"%({name})s" for name in columns]
    statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join(marks)})"
    conn.exec_driver_sql(statement, list(rows))
