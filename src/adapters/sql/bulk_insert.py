"""Many rows through the driver itself: written by COPY on PostgreSQL and executemany on SQLite,
read by its cursor. For a batch's tens of thousands of rows, SQLAlchemy's per-row parameter and
row processing costs as much as the database, and PostgreSQL's one INSERT per row more than both."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.exc import DBAPIError


@contextlib.contextmanager
def driver_cursor(conn: Connection, statement: str) -> Iterator[Any]:
    """A cursor of the driver on the caller's transaction, closed afterwards. A driver error
    leaves as SQLAlchemy's (OperationalError, IntegrityError, ...), as from conn.execute, so
    that database_errors() makes it the ports' DatabaseFailure or DatabaseUnavailable."""
    cursor = conn.connection.cursor()
    try:
        yield cursor
    except conn.dialect.loaded_dbapi.Error as error:
        raise DBAPIError.instance(statement, None, error, conn.dialect.loaded_dbapi.Error) from error
    finally:
        cursor.close()


def insert_rows(conn: Connection, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """INSERT every row (its values in the order of `columns`, names of columns of `table`) in
    the caller's transaction. Values go to the driver as they are: None, bool, int, float and str only."""
    if not rows:
        return
    names = ", ".join([table.c[name].name for name in columns])  # a KeyError for a name that is no column
    if conn.dialect.name == "postgresql":
        # psycopg's COPY: one statement streams every row, each value adapted by its Python type.
        statement = f"COPY {table.name} ({names}) FROM STDIN"
        with driver_cursor(conn, statement) as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(row)
        return
    # Positional parameters, so the rows go to the driver as they are (sqlite3's `?`).
    statement = f"INSERT INTO {table.name} ({names}) VALUES ({', '.join(['?'] * len(columns))})"
    conn.exec_driver_sql(statement, list(rows))
