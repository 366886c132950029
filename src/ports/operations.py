"""What a serving process reports of itself: its readiness, the outcome of its latest intake and
the metrics it exposes."""

from __future__ import annotations

from typing import Any, Protocol


class ReadinessChecks(Protocol):
    async def check(self) -> dict[str, Any]:
        """Each check's name and "ok" or what failed; never raises."""


class IntakeHealth(Protocol):
    """Whether accepting a job worked the last time: a failure keeps the process not ready."""

    def succeeded(self) -> None: ...

    def failed(self) -> None: ...


class Increments(Protocol):
    def inc(self, amount: float = 1) -> None: ...


class ApiMetrics(Protocol):
    jobs_accepted: Increments

    def exposition(self) -> tuple[bytes, str]:
        """The metrics as a scrape answers them: (body, content type)."""
