"""Readiness of the in-memory graph: its store and queue live in the process's own memory."""

from __future__ import annotations

from typing import Any

from firmsift.adapters.readiness import IntakeOutcomes


class InMemoryReadiness:
    """The checks Readiness reports, for a store and a queue that always answer and take writes:
    only a failed intake (a queue told to fail its next send) makes the process not ready."""

    def __init__(self, intake: IntakeOutcomes) -> None:
        self.intake = intake

    async def check(self) -> dict[str, Any]:
        return {"database": "ok", "database_writes": "ok", "queue": "ok",
                "intake": "failing" if self.intake.failing() else "ok"}
