"""Reading the wait a provider asks for in its response headers (Retry-After, retry-after-ms)."""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from datetime import timezone

_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # ASCII digits: a header is ASCII, \d is not


def retry_after_seconds(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """The wait a provider asked for in its response headers, in seconds, or None.

    `retry-after-ms` (sent by OpenAI and Azure) is read before `Retry-After`, which is either
    a number of seconds or an HTTP-date (RFC 9110, 10.2.3); a date already past means no wait.
    A value that cannot be read is ignored rather than trusted. `now` is Unix time, for tests.
    """
    if not headers:
        return None
    fields = {str(name).lower(): str(value).strip() for name, value in headers.items()}
    millis = _seconds(fields.get("retry-after-ms", ""))
    if millis is not None:
        return millis / 1000
    value = fields.get("retry-after", "")
    seconds = _seconds(value)
    if seconds is not None or not value:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000" parses naive; HTTP-dates are always GMT
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _seconds(text: str) -> float | None:
    if not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None
