"""Time: the clock the domain records by (job creation, answers, key revocation: timezone-aware
UTC), the clock that measures intervals (leases, heartbeats, liveness), and the shape of a wait
that code taking its time (retries, rate budgets) is given, so a test can pass one that records
the waits instead of sleeping."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timezone

# Seconds on a clock that never goes back (time.monotonic, which asyncio's event loop also reads;
# a test's virtual-time loop gives its own). Only differences between two readings mean anything.
Clock = Callable[[], float]

# Waits the given number of seconds: asyncio.sleep, or a test's recorder.
Sleep = Callable[[float], Awaitable[object]]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)
