"""Daily spend limits: the UTC day a spend is counted in, when it resets, how a limit is read,
and the refusal a caller gets when a limit is reached. Checking them against the store:
services/budgets.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone
from typing import Any

from firmsift.domain.errors import FirmsiftError

MAX_LIMIT_USD = 1_000_000.0  # a typo guard: no sane daily limit is larger


@dataclass(frozen=True)
class SpendWindow:
    """One UTC calendar day, [start, end): a day's spend is what finished in it."""

    start: datetime
    end: datetime

    @property
    def resets_at(self) -> datetime:
        return self.end

    def seconds_left(self, now: datetime) -> int:
        """Whole seconds from `now` to the reset, at least 1 (a Retry-After of 0 invites a spin)."""
        return max(1, math.ceil((self.end - now).total_seconds()))


def window_of(now: datetime) -> SpendWindow:
    """The UTC day holding `now` (which must be timezone-aware)."""
    if now.tzinfo is None:
        raise ValueError("a spend window needs a timezone-aware time")
    start = datetime.combine(now.astimezone(timezone.utc).date(), time(0), tzinfo=timezone.utc)
    return SpendWindow(start, start + timedelta(days=1))


def parse_limit(text: str) -> float | None:
    """A daily limit in USD from a command line or setting: a number from 0 to MAX_LIMIT_USD, or
    "none" / "" for no limit. 0 is a real limit: nothing may be spent."""
    cleaned = text.strip().lower()
    if cleaned in ("", "none"):
        return None
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"{text!r} is not a limit: give an amount in USD (e.g. 5 or 2.50) or 'none'") from None
    return check_limit(value)


def check_limit(value: float | None) -> float | None:
    """`value` if it is a usable limit (finite, 0 to MAX_LIMIT_USD), else ValueError."""
    if value is not None and not 0 <= value <= MAX_LIMIT_USD:  # NaN fails both comparisons
        raise ValueError(f"a daily limit must be from 0 to {MAX_LIMIT_USD:g} USD, not {value!r}")
    return value


def reached(limit: float | None, spent: float) -> bool:
    """Whether a limit stops new spending: the spend has met or passed it (no limit: never)."""
    return limit is not None and spent >= limit


class BudgetExhausted(FirmsiftError):
    """A daily spend limit (the key's or the global one) is reached until `resets_at`."""

    code = "budget_exhausted"

    def __init__(self, scope: str, limit: float, spent: float, window: SpendWindow, now: datetime) -> None:
        self.scope = scope  # "key" or "global"
        self.limit = limit
        self.spent = spent
        self.resets_at = window.resets_at
        self.retry_after = window.seconds_left(now)
        whose = "this API key's daily spend limit" if scope == "key" else "the service's global daily spend limit"
        super().__init__(
            f"{whose} of {limit:g} USD is reached ({spent:.6g} USD spent today, UTC); "
            f"it resets at {self.resets_at.isoformat()}")


class SpendingPaused(Exception):
    """Raised to the worker: a job's remaining domains wait, PENDING, until `refusal` lifts.
    Not a failure: the job's message comes back later (see entrypoints/worker/loop.py)."""

    def __init__(self, refusal: BudgetExhausted) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


@dataclass(frozen=True)
class JobPause:
    """Why a job's remaining domains wait, as the worker recorded it when it paused the job: which
    limit was reached, at what spend, and when the worker looks again (the reset, or sooner so
    that a raised limit takes effect). Cleared when the job runs again."""

    scope: str  # "key" or "global", as BudgetExhausted
    limit_usd: float
    spent_usd: float
    paused_at: datetime
    resets_at: datetime
    next_check_at: datetime

    @classmethod
    def of(cls, refusal: BudgetExhausted, now: datetime, recheck_seconds: float) -> JobPause:
        """The pause a refusal causes at `now`: the job is looked at again at the reset, or after
        `recheck_seconds` if that is sooner."""
        delay = min(refusal.retry_after, recheck_seconds)
        return cls(refusal.scope, refusal.limit, refusal.spent, now, refusal.resets_at, now + timedelta(seconds=delay))


@dataclass(frozen=True)
class BatchPause:
    """A batch's paused jobs: how many wait on a spend limit, and the latest pause among them."""

    latest: JobPause
    jobs: int


def pause_document(pause: JobPause) -> dict[str, Any]:
    """A pause as GET of a job or a batch shows it."""
    whose = "the API key's daily spend limit" if pause.scope == "key" else "the service's global daily spend limit"
    return {
        "reason": "budget_exhausted",
        "limit": pause.scope,
        "limit_usd": pause.limit_usd,
        "spent_usd": round(pause.spent_usd, 6),
        "paused_at": pause.paused_at.isoformat(),
        "resets_at": pause.resets_at.isoformat(),
        "next_check_at": pause.next_check_at.isoformat(),
        "message": (f"paused: {whose} of {pause.limit_usd:g} USD was reached ({pause.spent_usd:.6g} USD spent that "
                    f"day, UTC); it resets at {pause.resets_at.isoformat()}, and the job is looked at again at "
                    f"{pause.next_check_at.isoformat()} (a raised limit takes effect then)"),
    }


def batch_pause_document(pause: BatchPause) -> dict[str, Any]:
    """A batch's pause as GET /batches/{id} shows it: its latest job pause and how many jobs wait."""
    return {**pause_document(pause.latest), "jobs": pause.jobs}
