"""Readiness checks: can this process accept work right now? Its database answers and takes
writes, its work queue answers, and the last attempt to accept a job did not fail."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from sqlalchemy import Engine, text

from firmsift.ports.infrastructure_errors import DatabaseReadOnly

CHECK_TIMEOUT_SECONDS = 3.0
INTAKE_FAILURE_SECONDS = 10.0  # how long a failed intake keeps the process not ready (unless one succeeds)
# A real write, committed, to a row every database has once migrated: a database that answers
# reads but refuses writes (a full disk, a read-only file or mount, a standby after a failover)
# passes `SELECT 1` and fails every submit.
WRITE_PROBE = text("UPDATE alembic_version SET version_num = version_num")
log = logging.getLogger(__name__)


class CountsQueue(Protocol):
    async def approximate_counts(self) -> dict[str, int]: ...


class IntakeOutcomes:
    """What happened to the latest attempt to accept a job in this process. A queue can answer
    its readiness call and still refuse messages (a policy, a quota), so the intake's own result
    counts too: a failure keeps the process not ready for INTAKE_FAILURE_SECONDS or until a
    later intake succeeds, after which traffic finds out again."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.failed_at: float | None = None

    def succeeded(self) -> None:
        self.failed_at = None

    def failed(self) -> None:
        self.failed_at = self.clock()

    def failing(self) -> bool:
        return self.failed_at is not None and self.clock() - self.failed_at < INTAKE_FAILURE_SECONDS


class Readiness:
    """Runs each check with a timeout; a failing check reports its error, never raises."""

    def __init__(self, engine: Engine, queue: CountsQueue, intake: IntakeOutcomes | None = None) -> None:
        self.engine = engine
        self.queue = queue
        self.intake = intake or IntakeOutcomes()

    async def check(self) -> dict[str, Any]:
        stages: set[str] = set()
        outcome, queue = await asyncio.gather(
            self._run(self._database(stages), "failing"), self._run(self.queue.approximate_counts(), "unreachable"))
        # A failure (or a timeout) after the read is the writes'; before it, the database's. A
        # SQLite file found read-only is refused before any read: both say so.
        reads = "ok" if "read" in stages else ("unreachable" if outcome == "failing" else outcome)
        writes = outcome if "read" in stages else reads
        return {"database": reads, "database_writes": writes, "queue": queue,
                "intake": "failing" if self.intake.failing() else "ok"}

    async def _database(self, stages: set[str]) -> None:
        """SELECT 1, then the write probe, in one transaction on one connection (a partition
        leaves one thread waiting, not two); `stages` records how far it got."""

        def probe() -> None:
            with self.engine.begin() as conn:
                conn.execute(text("SELECT 1"))
                stages.add("read")
                conn.execute(WRITE_PROBE)

        await asyncio.to_thread(probe)

    @staticmethod
    async def _run(check: Any, failure: str) -> str:
        try:
            await asyncio.wait_for(check, CHECK_TIMEOUT_SECONDS)
        except asyncio.TimeoutError:
            return f"timed out after {CHECK_TIMEOUT_SECONDS:.0f}s"
        except DatabaseReadOnly as error:
            log.warning("readiness check failed: %s", error)
            return f"read-only: {error.what}"  # the file's name; its folder stays in the log
        except Exception as error:  # noqa: BLE001 - readiness reports any failure as not ready
            # Hosts, users and URLs stay in the log: /readyz is open to anyone who can reach it.
            log.warning("readiness check failed", extra={"error": f"{type(error).__name__}: {error}"})
            return failure
        return "ok"
