"""Per-key request rate limits: an in-process token bucket for each API key."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from firmsift.domain.errors import FirmsiftError


class RateLimited(FirmsiftError):
    """The key has used its requests for now; `retry_after` says when the next one is allowed."""

    code = "rate_limited"

    def __init__(self, retry_after: int, per_minute: int) -> None:
        super().__init__(f"rate limit of {per_minute} requests a minute for this API key reached; "
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
    not to bill anyone. One bucket per key id, and key ids are rows in api_keys, so the memory
    used is bounded by the number of keys."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be at least 1 (turn the limit off by not using one)")
        self.per_minute = per_minute
        self.rate = per_minute / 60.0  # tokens per second
        self.clock = clock
        self.buckets: dict[str, _Bucket] = {}

    def take(self, key: str) -> None:
        """Spend one token of `key`'s bucket, or raise RateLimited with whole seconds to wait."""
        now = self.clock()
        bucket = self.buckets.setdefault(key, _Bucket(tokens=float(self.per_minute), updated=now))
        bucket.tokens = min(float(self.per_minute), bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return
        raise RateLimited(max(1, math.ceil((1.0 - bucket.tokens) / self.rate)), self.per_minute)
