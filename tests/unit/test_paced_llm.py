"""The paced LLM on a fake clock: limits learned from one answer pace the next calls, a 429 pauses
every process sharing the state, the ceiling is shared, and unpaced calls spare the store."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from firmsift.adapters.decorators.pacing import UNPACED_RECHECK_SECONDS, PacedLLM
from firmsift.adapters.decorators.prometheus_metrics import Metrics
from firmsift.adapters.memory.pacing import InMemoryPacing
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.domain.model import Completion
from firmsift.domain.pacing import HEADROOM, PacingState
from firmsift.domain.rate_limit_headers import RateLimitHeaders

pytestmark = pytest.mark.anyio
T = TypeVar("T")
START = 1_700_000_000.0


class FakeTime:
    def __init__(self) -> None:
        self.now = START

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


class AnsweringLLM:
    """Answers from a list of replies (a Completion, or a ProviderError to raise); records start times."""

    model = "fake-model"

    def __init__(self, time: FakeTime, *replies: Completion | ProviderError) -> None:
        self.time, self.replies, self.started = time, list(replies), []

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        self.started.append(self.time.now - START)
        reply = self.replies.pop(0) if self.replies else Completion("{}", self.model)
        if isinstance(reply, ProviderError):
            raise reply
        return reply


class CountingStore(InMemoryPacing):
    def __init__(self, time: FakeTime) -> None:
        super().__init__(clock=time.clock)
        self.updates = 0

    async def update(self, key: str, change: Callable[[PacingState, float], tuple[PacingState, T]]) -> T:
        self.updates += 1
        return await super().update(key, change)


def paced(llm: AnsweringLLM, store: InMemoryPacing, time: FakeTime, **options: Any) -> PacedLLM:
    return PacedLLM(llm, store, key="fake-model@http://x", clock=time.clock, sleep=time.sleep, **options)


async def ask(llm: PacedLLM, times: int = 1) -> None:
    for _ in range(times):
        try:
            await llm.complete("s", "u", json_schema={})
        except ProviderError:
            pass


async def test_limits_announced_by_one_answer_pace_the_next_calls() -> None:
    time = FakeTime()
    limits = RateLimitHeaders(limit_requests=60, remaining_requests=59)
    inner = AnsweringLLM(time, Completion("{}", "fake-model", rate_limits=limits))
    metrics = Metrics()
    await ask(paced(inner, InMemoryPacing(time.clock), time, metrics=metrics), 4)
    gap = 60 / (60 * HEADROOM)
    assert inner.started == pytest.approx([0, 0, gap, 2 * gap])
    assert metrics.llm_learned_limit.labels(kind="requests")._value.get() == 60


async def test_a_429_in_one_process_pauses_the_others() -> None:
    time, store = FakeTime(), InMemoryPacing()
    store.clock = time.clock
    refusal = ProviderError("429", retryable=True, retry_after=5.0, cause=FailureCause.RATE_LIMITED)
    first_inner, second_inner = AnsweringLLM(time, refusal), AnsweringLLM(time)
    metrics = Metrics()
    first, second = paced(first_inner, store, time, metrics=metrics), paced(second_inner, store, time)
    await ask(first)  # refused at 0: its next turn tells the store
    await ask(first)
    await ask(second)
    assert first_inner.started[1] == pytest.approx(5.0)
    assert second_inner.started[0] >= 5.0  # and later still: without headers, the rate was halved too
    assert metrics.llm_rate_limited._value.get() == 1


async def test_the_ceiling_is_shared_by_every_process() -> None:
    time, store = FakeTime(), InMemoryPacing()
    store.clock = time.clock
    inners = [AnsweringLLM(time), AnsweringLLM(time)]
    llms = [paced(inner, store, time, ceiling=60.0) for inner in inners]
    for _ in range(3):
        for llm in llms:
            await ask(llm)
    assert inners[0].started == pytest.approx([0, 2, 4]) and inners[1].started == pytest.approx([1, 3, 5])


async def test_unpaced_calls_read_the_store_about_once_a_second() -> None:
    time = FakeTime()
    store = CountingStore(time)
    llm = paced(AnsweringLLM(time), store, time)
    await ask(llm, 50)  # all at one instant: one read
    assert store.updates == 1
    time.now += UNPACED_RECHECK_SECONDS
    await ask(llm, 50)
    assert store.updates == 2


async def test_news_goes_to_the_store_at_once_even_when_unpaced() -> None:
    time = FakeTime()
    store = CountingStore(time)
    limits = RateLimitHeaders(remaining_tokens=0, reset_tokens=3.0)  # a budget used up, no limit named
    inner = AnsweringLLM(time, Completion("{}", "fake-model", rate_limits=limits))
    await ask(paced(inner, store, time), 2)
    assert store.updates == 2 and inner.started == pytest.approx([0, 3.0])
