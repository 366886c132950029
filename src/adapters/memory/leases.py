"""In-memory answer leases (tests, and one-process deployments)."""

from __future__ import annotations

import time
from collections.abc import Callable


class InMemoryLeases:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.held: dict[tuple[str, str], tuple[str, float]] = {}

    async def acquire(self, domain: str, classifier: str, holder: str, ttl_seconds: float) -> bool:
        now = self.clock()
        current = self.held.get((domain, classifier))
        if current is not None and current[0] != holder and current[1] > now:
            return False
        self.held[(domain, classifier)] = (holder, now + ttl_seconds)
        return True

    async def release(self, domain: str, classifier: str, holder: str) -> None:
        if self.held.get((domain, classifier), ("", 0.0))[0] == holder:
            del self.held[(domain, classifier)]
