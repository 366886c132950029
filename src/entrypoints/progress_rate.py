"""The rate and time left that the progress lines of `firmsift classify` and `firmsift eval` show."""

from __future__ import annotations


def rate_and_eta(done_since_start: int, seconds_since_start: float, left: int) -> tuple[float, str]:
    """Items per second since the line was first shown, and the time left at that rate
    ("3m05s", "1h02m"; "unknown" before anything finished)."""
    rate = done_since_start / seconds_since_start if seconds_since_start > 0 else 0.0
    return rate, (duration_text(left / rate) if rate > 0 else "unknown")


def duration_text(seconds: float) -> str:
    """A short duration: "0m07s", "12m30s", "2h05m"."""
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"
