"""A requests-per-minute budget shared by concurrent callers, and the search decorator that spends it."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from firmsift.domain.clock import Sleep
from firmsift.domain.model import Evidence
from firmsift.ports.providers import Search


class RateBudget:
    """At most `per_minute` calls start per minute, evenly spaced, with up to `burst` at once
    after a quiet spell; None or 0 means unlimited.

    Use `async with budget:` or `await budget.acquire()` before each call. Callers go first come,
    first served: each one books the next free slot before it waits (the generic cell rate
    algorithm), so a burst of jobs queues up in order instead of reaching the provider at once,
    and a late caller can never overtake one already waiting. A caller cancelled while waiting
    does not give its slot back: the budget errs on the side of fewer requests, never more.
    The budget is per process: with N worker processes, give each one N-th of the provider's limit.
    """

    def __init__(
        self,
        per_minute: float | None,
        *,
        burst: int = 1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if per_minute is not None and not (per_minute >= 0 and math.isfinite(per_minute)):
            raise ValueError("per_minute must be a finite number >= 0 (0 or None: unlimited)")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        self.per_minute = per_minute or None
        self.burst = burst
        self._interval = 60.0 / per_minute if per_minute else 0.0
        self._clock = clock
        self._sleep = sleep
        self._next = -math.inf  # when the next caller would go if bursts were not allowed

    def __repr__(self) -> str:
        return f"RateBudget(per_minute={self.per_minute!r}, burst={self.burst})"

    @property
    def unlimited(self) -> bool:
        return self.per_minute is None

    async def acquire(self) -> None:
        """Return when this caller may start its call: at once while the budget has room."""
        if self.unlimited:
            return
        now = self._clock()
        # Book the slot before awaiting anything: that is what keeps the queue in arrival order.
        due = max(self._next, now)
        self._next = due + self._interval
        start = due - (self.burst - 1) * self._interval
        if start > now:
            await self._sleep(start - now)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        return None


class RateLimitedSearch:
    """A search provider whose calls each wait for a slot in a RateBudget (e.g. Brave's 1 per second)."""

    def __init__(self, search: Search, budget: RateBudget) -> None:
        self.inner = search
        self.name = search.name
        self.budget = budget

    async def gather(self, domain: str) -> list[Evidence]:
        async with self.budget:
            return await self.inner.gather(domain)
