"""A fresh, uniquely named PostgreSQL database per test, dropped afterwards; skips (or, on CI,
fails) loudly when the server is unreachable."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from firmsift.adapters.sql.engine import database_url, make_engine
from firmsift.adapters.sql.migrations import upgrade

# The server tests create their databases on; its own database is only used to connect.
DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
URL_VARIABLE = "FIRMSIFT_TEST_POSTGRES_URL"


def admin_url() -> str:
    return os.environ.get(URL_VARIABLE) or DEFAULT_ADMIN_URL


@contextmanager
def postgres_engine(*, migrate: bool = True, encoding: str | None = None) -> Iterator[Engine]:
    """An engine on a new database `firmsift_test_<random>` (migrated unless `migrate` is
    False; in `encoding`, e.g. a legacy LATIN1 database, when given), dropped with every
    connection to it when the block ends."""
    admin = create_engine(
        database_url(admin_url()), isolation_level="AUTOCOMMIT", poolclass=NullPool,
        connect_args={"connect_timeout": 5},
    )
    name = f"firmsift_test_{uuid.uuid4().hex[:16]}"
    try:
        with admin.connect() as conn:
            # Another encoding than the template's needs template0 and a locale that fits any (C).
            options = f" ENCODING '{encoding}' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'" if encoding else ""
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"{options}')
    except OperationalError as exc:
        admin.dispose()
        _unreachable(exc)
    engine = make_engine(admin.url.set(database=name))
    try:
        if migrate:
            upgrade(engine)
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as conn:
            # FORCE ends connections a test left open (a listener thread, a leaked session).
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def _unreachable(exc: OperationalError) -> None:
    url = database_url(admin_url())
    reason = (
        f"PostgreSQL at {url.host}:{url.port or 5432} unreachable: {str(exc.orig or exc).strip()}"
        f" (start it, or point {URL_VARIABLE} at a server)"
    )
    # CI provides the server: a missing one there is a broken pipeline, not a reason to skip.
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
