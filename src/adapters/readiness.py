"""Readiness checks: can this process reach its database and its work queue right now?"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from sqlalchemy import Engine, text

CHECK_TIMEOUT_SECONDS = 3.0
log = logging.getLogger(__name__)


class CountsQueue(Protocol):
    async def approximate_counts(self) -> dict[str, int]: ...


class Readiness:
    """Runs each check with a timeout; a failing check reports its error, never raises."""

    def __init__(self, engine: Engine, queue: CountsQueue) -> None:
        self.engine = engine
        self.queue = queue

    async def check(self) -> dict[str, Any]:
        database, queue = await asyncio.gather(self._run(self._database()), self._run(self.queue.approximate_counts()))
        return {"database": database, "queue": queue}

    async def _database(self) -> None:
        def ping() -> None:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))

        await asyncio.to_thread(ping)

    @staticmethod
    async def _run(check: Any) -> str:
        try:
            await asyncio.wait_for(check, CHECK_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            return f"timed out after {CHECK_TIMEOUT_SECONDS:.0f}s"
        except Exception as error:  # noqa: BLE001 - readiness reports any failure as not ready
            # Hosts, users and URLs stay in the log: /readyz is open to anyone who can reach it.
            log.warning("readiness check failed", extra={"error": f"{type(error).__name__}: {error}"})
            return "unreachable"
        return "ok"
