"""Request rate limits: an in-process token bucket for each API key, and for each client
address sending unknown keys."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from firmsift.domain.errors import FirmsiftError


class RateLimited(FirmsiftError):
    """The key has used its requests for now; `retry_after` says when the next one is allowed."""

    code = "rate_limited"

    def __init__(self, retry_after: int, per_minute: int, holder: str = "this API key") -> None:
        super().__init__(f"rate limit of {per_minute} requests a minute for {holder} reached; "
                         f"retry in {retry_after} s")
        self.retry_after = retry_after


@dataclass
class _Bucket:
    tokens: float
    updated: float


class TokenBuckets:
    """`per_minute` requests a minute per key, with bursts of up to a minute's worth.

    Buckets live in this process: with N API processes a key may make up to N times the limit.
    That is the price of needing no shared store; the limit is there to stop a runaway client,
    not to bill anyone. At most `max_buckets` are kept (the least recently used go first): key ids
    are bounded by the api_keys table, client addresses are not."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic,
                 holder: str = "this API key", max_buckets: int = 100_000) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1 (turn the limit off by not using one)")
        self.per_minute = per_minute
        self.rate = per_minute / 60.0  # tokens per second
        self.clock = clock
        self.holder = holder
        self.max_buckets = max_buckets
        self.buckets: dict[str, _Bucket] = {}

    def take(self, key: str) -> None:
        """Spend one token of `key`'s bucket, or raise RateLimited with whole seconds to wait."""
        self.check(key)
        self.spend(key)

    def check(self, key: str) -> None:
        """Raise RateLimited if `key` has no token left; spend nothing."""
        bucket = self._refilled(key)
        if bucket.tokens < 1.0:
            raise RateLimited(max(1, math.ceil((1.0 - bucket.tokens) / self.rate)), self.per_minute, self.holder)

    def spend(self, key: str) -> None:
        """Spend a token of `key`'s bucket, if it has one."""
        bucket = self._refilled(key)
        bucket.tokens = max(0.0, bucket.tokens - 1.0)

    def _refilled(self, key: str) -> _Bucket:
        now = self.clock()
        bucket = self.buckets.pop(key, None) or _Bucket(tokens=float(self.per_minute), updated=now)
        self.buckets[key] = bucket  # last in the dict: most recently used
        bucket.tokens = min(float(self.per_minute), bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        while len(self.buckets) > self.max_buckets:
            del self.buckets[next(iter(self.buckets))]
        return bucket
