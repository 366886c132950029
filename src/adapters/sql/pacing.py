"""Pacing state in the database, one row per provider key, so every worker process on the same
database (whatever its queue, SQS included) paces its LLM calls as one."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, text

from firmsift.adapters.sql.engine import in_transaction
from firmsift.domain.pacing import PacingState

log = logging.getLogger(__name__)
T = TypeVar("T")

# The row stays locked until the transaction ends, so the next caller reads what this one wrote.
# SQLite needs no FOR UPDATE: every transaction there begins IMMEDIATE, one writer at a time.
READ_STATE = "SELECT state FROM llm_pacing WHERE provider_key = :key"
# Targets the primary key llm_pacing (provider_key): two first callers at once insert one row.
ADD_STATE = text("""
    INSERT INTO llm_pacing (provider_key, state, updated_at) VALUES (:key, :state, :now)
    ON CONFLICT (provider_key) DO NOTHING
""")
WRITE_STATE = text("UPDATE llm_pacing SET state = :state, updated_at = :now WHERE provider_key = :key")
_FIELDS = {field.name for field in dataclasses.fields(PacingState)}


class SqlPacing:
    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock
        lock = " FOR UPDATE" if engine.dialect.name == "postgresql" else ""
        self._read = text(READ_STATE + lock)

    async def update(self, key: str, change: Callable[[PacingState, float], tuple[PacingState, T]]) -> T:
        def step(conn: Connection) -> T:
            stored = conn.execute(self._read, {"key": key}).scalar()
            if stored is None:
                conn.execute(ADD_STATE, {"key": key, "state": "{}", "now": self.clock()})
                stored = conn.execute(self._read, {"key": key}).scalar_one()
            now = self.clock()  # read once the row is ours: the wait for the lock is behind us
            state, result = change(_state(stored, key), now)
            conn.execute(WRITE_STATE, {"key": key, "state": json.dumps(dataclasses.asdict(state)), "now": now})
            return result

        return await in_transaction(self.engine, step)


def _state(stored: str, key: str) -> PacingState:
    """The stored state; fields a newer or older firmsift wrote that this one does not know are
    left out, and an unreadable row starts afresh (pacing is relearned from the next answers)."""
    try:
        record: Any = json.loads(stored)
        return PacingState(**{name: value for name, value in record.items() if name in _FIELDS})
    except (ValueError, TypeError, AttributeError):
        log.warning("unreadable LLM pacing state; starting afresh", extra={"provider_key": key})
        return PacingState()
