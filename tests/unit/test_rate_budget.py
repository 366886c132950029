"""The requests-per-minute budget on a fake clock: spacing, bursts, first come first served."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.adapters.memory.providers import StaticSearch
from firmsift.adapters.decorators.rate_budget import RateBudget, RateLimitedSearch

pytestmark = pytest.mark.anyio


class FakeTime:
    """A clock that moves only when told to (`advance`) or, if `sleeps_advance`, when slept on."""

    def __init__(self, *, sleeps_advance: bool = True) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.sleeps_advance = sleeps_advance

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if self.sleeps_advance:
            self.now += seconds


def budget(per_minute: float | None, fake: FakeTime, burst: int = 1) -> RateBudget:
    return RateBudget(per_minute, burst=burst, clock=fake.clock, sleep=fake.sleep)


async def start_times(limit: RateBudget, fake: FakeTime, calls: int) -> list[float]:
    started = []
    for _ in range(calls):
        async with limit:
            started.append(fake.now)
    return started


@pytest.mark.parametrize(("per_minute", "calls", "expected"), [(60, 5, 4.0), (30, 6, 10.0), (600, 11, 1.0)])
async def test_n_calls_take_the_time_the_budget_allows(per_minute: int, calls: int, expected: float) -> None:
    fake = FakeTime()
    started = await start_times(budget(per_minute, fake), fake, calls)
    assert started[0] == 0.0
    assert fake.now == pytest.approx(expected)
    assert all(b - a == pytest.approx(60 / per_minute) for a, b in zip(started, started[1:]))


async def test_a_burst_goes_at_once_after_a_quiet_spell_then_the_rate_holds() -> None:
    fake = FakeTime()
    limit = budget(60, fake, burst=3)
    assert await start_times(limit, fake, 5) == [0.0, 0.0, 0.0, 1.0, 2.0]
    fake.now += 100  # quiet: the burst allowance fills up again, no more
    assert await start_times(limit, fake, 4) == [102.0, 102.0, 102.0, 103.0]


async def test_concurrent_callers_beyond_the_budget_queue_in_arrival_order() -> None:
    fake = FakeTime(sleeps_advance=False)  # everyone arrives at t=0 and books a slot
    limit = budget(60, fake)
    order: list[int] = []

    async def call(number: int) -> None:
        await limit.acquire()
        order.append(number)

    await asyncio.gather(*(call(n) for n in range(5)))
    assert fake.sleeps == [1.0, 2.0, 3.0, 4.0]  # the first went at once, then one a second
    assert order == [0, 1, 2, 3, 4]


async def test_a_late_caller_cannot_overtake_the_queue() -> None:
    fake = FakeTime(sleeps_advance=False)
    limit = budget(60, fake)
    for _ in range(3):
        await limit.acquire()  # booked at 0, 1 and 2 s
    fake.now = 0.5
    await limit.acquire()
    assert fake.sleeps == [1.0, 2.0, 2.5]  # booked at 3 s, after the others


@pytest.mark.parametrize("per_minute", [None, 0])
async def test_none_or_zero_means_unlimited(per_minute: float | None) -> None:
    fake = FakeTime()
    limit = budget(per_minute, fake)
    assert limit.unlimited
    assert await start_times(limit, fake, 100) == [0.0] * 100
    assert fake.sleeps == []


@pytest.mark.parametrize("options", [{"per_minute": -1}, {"per_minute": float("inf")}, {"per_minute": 5, "burst": 0}])
def test_nonsense_budgets_are_refused(options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RateBudget(**options)  # type: ignore[arg-type]


async def test_rate_limited_searches_spend_the_budget_and_keep_their_names() -> None:
    fake = FakeTime()
    limit = budget(120, fake)
    first, second = RateLimitedSearch(StaticSearch(), limit), RateLimitedSearch(StaticSearch(), limit)
    assert first.name == "static"  # one budget may be shared by several ports

    await first.gather("acme.com")
    await second.gather("acme.com")
    await first.gather("acme.com")
    assert fake.sleeps == [0.5, 0.5]


@given(
    per_minute=st.floats(1, 6000),
    burst=st.integers(1, 5),
    gaps=st.lists(st.floats(0, 5), min_size=1, max_size=40),
)
def test_starts_keep_arrival_order_and_never_beat_the_budget(
    per_minute: float, burst: int, gaps: list[float]
) -> None:
    fake = FakeTime(sleeps_advance=False)
    limit = budget(per_minute, fake, burst=burst)
    starts = []
    for gap in gaps:  # callers arrive `gap` seconds apart, whether or not earlier ones still wait
        fake.now += gap
        waited = len(fake.sleeps)
        asyncio.run(limit.acquire())
        starts.append(fake.now + (fake.sleeps[-1] if len(fake.sleeps) > waited else 0.0))
    interval = 60 / per_minute
    assert starts == sorted(starts)
    for i, first in enumerate(starts):
        for j in range(i + 1, len(starts)):
            # Any j - i + 1 consecutive starts span at least (j - i + 1 - burst) intervals.
            assert starts[j] - first >= (j - i + 1 - burst) * interval - 1e-6
