"""Fixtures the integration suites share: the batch store on every backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.store import SqlStore
from tests.support.databases import SQL_BACKENDS, migrated_engine


@pytest.fixture(params=["memory", *SQL_BACKENDS])
async def batches(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[InMemoryBatches | SqlBatches]:
    """The batch store on the in-memory store, SQLite and PostgreSQL."""
    if request.param == "memory":
        yield InMemoryBatches(InMemoryStore())
        return
    with migrated_engine(request.param, tmp_path) as engine:
        yield SqlBatches(SqlStore(engine))
