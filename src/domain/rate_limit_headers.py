"""What a provider's rate-limit headers say: its limits per minute, what remains of them, and when
they reset (OpenAI's x-ratelimit-* headers, which OpenAI-compatible servers and gateways copy)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

# litellm hands a successful answer's headers over twice: OpenAI's own under their names, and
# every header the provider sent under "llm_provider-<name>". The raw copy wins where both exist.
PROVIDER_PREFIX = "llm_provider-"
# Go-style durations, as OpenAI writes its resets: "6m0s", "1s", "120ms", "1h2m3.5s", "59.99s".
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|h|m|s)")
_PLAIN_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


@dataclass(frozen=True)
class RateLimitHeaders:
    """The rate-limit state a provider announced with one answer. Limits are per minute (OpenAI's
    windows); a reset is the seconds until that budget is whole again. None: not sent or unreadable."""

    limit_requests: int | None = None
    limit_tokens: int | None = None
    remaining_requests: int | None = None
    remaining_tokens: int | None = None
    reset_requests: float | None = None
    reset_tokens: float | None = None


def duration_seconds(text: str) -> float | None:
    """Seconds in a duration header: Go-style ("6m0s", "120ms", "1h2m3.5s") or a plain number of
    seconds ("20", "0.5"); None for anything else (empty, negative, a unit twice in a row...)."""
    text = text.strip()
    if _PLAIN_NUMBER.fullmatch(text):
        return _finite(float(text))
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    units = [unit for _, unit in parts]
    if len(set(units)) != len(units):
        return None
    return _finite(sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts))


def read_rate_limit_headers(headers: Mapping[str, str] | None) -> RateLimitHeaders | None:
    """The x-ratelimit-* fields of a response's headers (names in any case, raw or behind
    litellm's "llm_provider-" prefix), or None when none of them could be read. A value that
    cannot be read is left out rather than trusted."""
    if not headers:
        return None
    fields: dict[str, str] = {}
    for name, value in headers.items():
        lower = str(name).lower()
        if lower.startswith(PROVIDER_PREFIX):
            fields[lower.removeprefix(PROVIDER_PREFIX)] = str(value)
        else:
            fields.setdefault(lower, str(value))
    read = RateLimitHeaders(
        limit_requests=_count(fields.get("x-ratelimit-limit-requests"), positive=True),
        limit_tokens=_count(fields.get("x-ratelimit-limit-tokens"), positive=True),
        remaining_requests=_count(fields.get("x-ratelimit-remaining-requests")),
        remaining_tokens=_count(fields.get("x-ratelimit-remaining-tokens")),
        reset_requests=_duration(fields.get("x-ratelimit-reset-requests")),
        reset_tokens=_duration(fields.get("x-ratelimit-reset-tokens")),
    )
    return None if read == RateLimitHeaders() else read


def _count(value: str | None, *, positive: bool = False) -> int | None:
    if value is None or not value.strip().isascii() or not value.strip().isdigit():
        return None
    number = int(value.strip())
    return None if positive and number == 0 else number


def _duration(value: str | None) -> float | None:
    return None if value is None else duration_seconds(value)


def _finite(seconds: float) -> float | None:
    return seconds if math.isfinite(seconds) else None
