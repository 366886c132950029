"""The lease port: which worker is asking the LLM about a (domain, classifier) right now."""

from __future__ import annotations

from typing import Protocol


class AnswerLeases(Protocol):
    async def acquire(self, domain: str, classifier: str, holder: str, ttl_seconds: float) -> bool:
        """True when `holder` now holds the lease: nobody else held a live one. A lease lapses
        after ttl_seconds, so a worker that dies never blocks the domain for long."""

    async def release(self, domain: str, classifier: str, holder: str) -> None:
        """Give the lease up early (after the answer is stored); a no-op unless `holder` holds it."""
