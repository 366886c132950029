"""A migrated engine on either SQL backend, so one suite runs against SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine

from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.migrations import upgrade
from tests.support.postgres import postgres_engine

SQL_BACKENDS = ("sqlite", "postgresql")


@contextmanager
def migrated_engine(backend: str, folder: Path, to: str | None = "head") -> Iterator[Engine]:
    """A fresh database of `backend` ("sqlite": a file in `folder`; "postgresql": a new database
    that skips or fails loudly when the server is unreachable), migrated up to revision `to`
    (None: left empty, as a database made before any revision or by older code), disposed afterwards."""
    if backend == "postgresql":
        with postgres_engine(migrate=False) as engine:
            if to is not None:
                upgrade(engine, to)
            yield engine
        return
    engine = make_engine(f"sqlite:///{folder / 'firmsift.db'}")
    try:
        if to is not None:
            upgrade(engine, to)
        yield engine
    finally:
        engine.dispose()
