"""A provider's rate limits as OpenAI enforces them, for the scripted LLM server: R requests and
T tokens per minute, each a bucket that holds one minute's worth and refills continuously, the
x-ratelimit-* headers on every answer, and 429 with Retry-After when a request does not fit."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    per_minute: int
    level: float
    at: float

    def refill(self, now: float) -> None:
        self.level = min(self.per_minute, self.level + (now - self.at) * self.per_minute / 60.0)
        self.at = now

    def seconds_until(self, amount: float) -> float:
        """Until `amount` fits (0: it does now)."""
        return max(0.0, amount - self.level) * 60.0 / self.per_minute

    def seconds_until_full(self) -> float:
        return (self.per_minute - self.level) * 60.0 / self.per_minute


class ProviderLimits:
    """Thread-safe: the server's handler threads charge requests at once. Counts what it let
    through (`accepted`, `tokens`) and what it refused (`refused`)."""

    def __init__(self, requests_per_minute: int, tokens_per_minute: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if requests_per_minute < 1 or tokens_per_minute < 1:
            raise ValueError("the limits must be at least 1 request and 1 token per minute")
        now = clock()
        self._requests = _Bucket(requests_per_minute, float(requests_per_minute), now)
        self._tokens = _Bucket(tokens_per_minute, float(tokens_per_minute), now)
        self._clock = clock
        self._lock = threading.Lock()
        self.accepted = self.refused = self.tokens = 0

    def charge(self, tokens: int) -> tuple[bool, tuple[tuple[str, str], ...]]:
        """(whether a request of `tokens` is let through now, the headers to answer it with).
        A refused request costs nothing; its headers add Retry-After, in whole seconds."""
        with self._lock:
            now = self._clock()
            self._requests.refill(now)
            self._tokens.refill(now)
            wait = max(self._requests.seconds_until(1), self._tokens.seconds_until(tokens))
            allowed = wait == 0
            if allowed:
                self._requests.level -= 1
                self._tokens.level -= tokens
                self.accepted += 1
                self.tokens += tokens
            else:
                self.refused += 1
            headers = self._headers()
        if not allowed:
            headers += (("retry-after", str(max(1, math.ceil(wait)))),)
        return allowed, headers

    def _headers(self) -> tuple[tuple[str, str], ...]:
        return (
            ("x-ratelimit-limit-requests", str(self._requests.per_minute)),
            ("x-ratelimit-limit-tokens", str(self._tokens.per_minute)),
            ("x-ratelimit-remaining-requests", str(max(0, math.floor(self._requests.level)))),
            ("x-ratelimit-remaining-tokens", str(max(0, math.floor(self._tokens.level)))),
            ("x-ratelimit-reset-requests", go_duration(self._requests.seconds_until_full())),
            ("x-ratelimit-reset-tokens", go_duration(self._tokens.seconds_until_full())),
        )


def go_duration(seconds: float) -> str:
    """A duration as OpenAI writes its resets: "6m0s", "1.5s", "120ms"."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.3g}s" if minutes else f"{rest:.3g}s"


def tokens_of(text: str) -> int:
    """Tokens a text is billed as: about four characters each, as OpenAI's rule of thumb has it."""
    return max(1, math.ceil(len(text) / 4))
