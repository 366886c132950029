"""The retry engine behind the retrying decorators: the policy (exponential backoff with full
jitter, Retry-After as a floor, a deadline), the Retrier that runs one call under it, and the
tally of retries by cause."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from firmsift.domain.clock import Sleep
from firmsift.domain.errors import FailureCause, ProviderError

log = logging.getLogger(__name__)

T = TypeVar("T")
# 2**1000 is still a finite float: a huge retry number saturates at max_delay instead of overflowing.
_MAX_EXPONENT = 1000


@dataclass(frozen=True)
class RetryPolicy:
    """How one provider call is tried again after a retryable ProviderError.

    The wait before retry n (n = 1 before the second attempt) is drawn uniformly from
    [0, min(max_delay, base_delay * 2**(n-1))] ("full jitter"), so workers that failed together
    do not come back together; jitter="none" waits the whole ceiling. A provider's Retry-After
    is a floor, even above max_delay: coming back sooner would only be refused again. A
    Retry-After above max_retry_after fails the call at once rather than hold a worker (and its
    job's message) that long. `deadline` bounds the whole call, attempts and waits included: no
    wait starts that would end past it, and the attempt running when it passes is cut short.
    """

    attempts: int = 4  # in all, the first one included
    base_delay: float = 0.5
    max_delay: float = 20.0
    jitter: Literal["full", "none"] = "full"
    deadline: float | None = 120.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("delays cannot be negative")
        if self.jitter not in ("full", "none"):
            raise ValueError(f"jitter must be 'full' or 'none', not {self.jitter!r}")
        if self.deadline is not None and self.deadline <= 0:
            raise ValueError("deadline must be positive (or None for no deadline)")

    def backoff(self, retry: int, draw: float) -> float:
        """The backoff before retry number `retry` (1-based), given a uniform draw from [0, 1)."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** min(retry - 1, _MAX_EXPONENT))
        return ceiling * draw if self.jitter == "full" else ceiling

    def delay(self, retry: int, draw: float, retry_after: float | None = None) -> float:
        """The wait before retry number `retry`: the backoff, or the provider's Retry-After if longer."""
        backoff = self.backoff(retry, draw)
        return backoff if retry_after is None else max(backoff, retry_after)


class RetryTally:
    """Retries counted by cause, for a summary in place of one log line per retry (`firmsift eval`)."""

    def __init__(self) -> None:
        self.by_cause: Counter[str] = Counter()

    def record(self, error: ProviderError) -> None:
        self.by_cause[_cause_of(error)] += 1

    @property
    def total(self) -> int:
        return sum(self.by_cause.values())

    def summary(self) -> str:
        """"12 retries (timeout 8, rate limited 4)", most frequent cause first; "no retries"."""
        if not self.total:
            return "no retries"
        causes = ", ".join(f"{cause} {count}" for cause, count in self.by_cause.most_common())
        return f"{self.total} {'retry' if self.total == 1 else 'retries'} ({causes})"


class Retrier:
    """Runs provider calls under one RetryPolicy: the engine of RetryingLLM and RetryingSearch.

    `sleep`, `random` and `clock` (monotonic seconds) are injectable so that tests can check the
    exact schedule without waiting for it. Each retry is logged as a warning naming its cause,
    or, when a `tally` is given, counted there and logged only at debug level."""

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        sleep: Sleep = asyncio.sleep,
        random: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
        tally: RetryTally | None = None,
    ) -> None:
        self.policy = policy
        self._sleep = sleep
        self._random = random
        self._clock = clock
        self.tally = tally

    async def run(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """The result of the first attempt that succeeds.

        Only a retryable ProviderError is tried again; any other error passes through at once
        (a ProviderError unchanged after one attempt). When the call gives up, the ProviderError
        raised says how many attempts were made and why it stopped. `what` names the provider.
        """
        started = self._clock()
        number = 0
        while True:
            number += 1
            timer = asyncio.timeout(self._time_left(started))
            try:
                async with timer:
                    return await attempt()
            except ProviderError as error:
                delay = self._wait_or_give_up(error, number, started)
                if self.tally is not None:
                    self.tally.record(error)
                log.log(logging.DEBUG if self.tally is not None else logging.WARNING,
                        "provider call failed, trying again", extra={
                            "provider": what, "attempt": number, "retry_in": round(delay, 3),
                            "cause": _cause_of(error), "error": str(error)})
            except TimeoutError:
                if not timer.expired():
                    raise  # not ours: the attempt's own business
                raise ProviderError(
                    f"{what}: no answer within the {self.policy.deadline:g}s deadline "
                    f"(gave up after {_attempts(number)})",
                    retryable=True, cause=FailureCause.TIMEOUT,
                ) from None
            await self._sleep(delay)

    def _time_left(self, started: float) -> float | None:
        if self.policy.deadline is None:
            return None
        return self.policy.deadline - (self._clock() - started)

    def _wait_or_give_up(self, error: ProviderError, number: int, started: float) -> float:
        """The wait before the next attempt; raises the final error when there is to be none."""
        policy = self.policy
        if not error.retryable:
            if number == 1:
                raise error
            raise _final(error, f"after {_attempts(number)}") from error
        if number >= policy.attempts:
            raise _final(error, f"gave up after {_attempts(number)}") from error
        retry_after = error.retry_after
        if retry_after is not None and retry_after > policy.max_retry_after:
            raise _final(error, f"gave up after {_attempts(number)}: the provider asked to wait "
                                f"{retry_after:g}s, more than the {policy.max_retry_after:g}s allowed") from error
        delay = policy.delay(number, self._random(), retry_after)
        left = self._time_left(started)
        if left is not None and delay >= left:
            raise _final(error, f"gave up after {_attempts(number)}: waiting {delay:.3g}s more "
                                f"would pass the {policy.deadline:g}s deadline") from error
        return delay


def _final(error: ProviderError, note: str) -> ProviderError:
    return ProviderError(f"{error} ({note})", retryable=error.retryable, retry_after=error.retry_after,
                         cause=error.cause, prompt_tokens=error.prompt_tokens,
                         completion_tokens=error.completion_tokens)


def _cause_of(error: ProviderError) -> str:
    cause = getattr(error, "cause", FailureCause.OTHER)
    return cause.value if isinstance(cause, FailureCause) else str(cause)


def _attempts(number: int) -> str:
    return f"{number} attempt" if number == 1 else f"{number} attempts"
