"""What a readiness check's result means: "ok", "degraded: why" (a problem worth showing that still
leaves the process able to do its work, so it counts as ready), or what failed."""

from __future__ import annotations

DEGRADED = "degraded"


def counts_as_ready(result: str) -> bool:
    return result == "ok" or result.startswith(DEGRADED)
