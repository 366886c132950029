"""Retry policy and the retrying decorators on in-memory fakes: exact schedules on a fake clock."""

from __future__ import annotations

import math
from collections.abc import Callable
from email.utils import formatdate

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.adapters.memory.providers import ScriptedLLM, StaticSearch
from firmsift.adapters.web.retry_after import retry_after_seconds
from firmsift.adapters.decorators.retrier import RetryPolicy
from firmsift.adapters.decorators.retrying import RetryingLLM, RetryingSearch
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence
from tests.support.virtual_time import VIRTUAL_TIME_BACKEND, loop_clock

SCHEMA: dict[str, object] = {"type": "object"}
ANSWER = '{"is_cpg": true, "confidence": 5, "reasoning": "snacks"}'


class FakeTime:
    """A clock that only moves when the code under test sleeps; every sleep is recorded."""

    def __init__(self, on_sleep: Callable[[], object] = lambda: None) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        self.on_sleep()


def busy(retry_after: float | None = None) -> ProviderError:
    return ProviderError("fake: HTTP 503", retryable=True, retry_after=retry_after)


def retrying(llm: ScriptedLLM, fake: FakeTime, draw: float = 0.5, **policy: object) -> RetryingLLM:
    return RetryingLLM(llm, RetryPolicy(**policy), sleep=fake.sleep, random=lambda: draw,  # type: ignore[arg-type]
                       clock=fake.clock)


async def ask(llm: RetryingLLM) -> str:
    return (await llm.complete("system", "Domain: acme.com\n", json_schema=SCHEMA)).text


@pytest.mark.anyio
async def test_backoff_doubles_with_full_jitter_until_an_attempt_succeeds() -> None:
    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(busy(), busy(), busy())

    assert await ask(retrying(llm, fake, draw=0.5, base_delay=1.0)) == ANSWER
    assert fake.sleeps == [0.5, 1.0, 2.0]  # half of 1, 2, 4
    assert len(llm.history) == 4


@pytest.mark.anyio
async def test_without_jitter_the_backoff_is_capped_at_max_delay() -> None:
    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(*(busy() for _ in range(6)))

    await ask(retrying(llm, fake, attempts=7, base_delay=1.0, max_delay=5.0, jitter="none", deadline=None))
    assert fake.sleeps == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


@pytest.mark.anyio
@pytest.mark.parametrize(("retry_after", "expected"), [(7.0, 7.0), (30.0, 30.0), (0.1, 0.5)])
async def test_retry_after_is_a_floor_even_above_max_delay(retry_after: float, expected: float) -> None:
    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(busy(retry_after))

    await ask(retrying(llm, fake, base_delay=1.0, max_delay=20.0, max_retry_after=60.0))
    assert fake.sleeps == [expected]
    assert len(llm.history) == 2


@pytest.mark.anyio
async def test_a_retry_after_beyond_the_cap_fails_at_once() -> None:
    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(busy(retry_after=3600))

    with pytest.raises(ProviderError, match=r"asked to wait 3600s, more than the 60s allowed") as caught:
        await ask(retrying(llm, fake))
    assert "gave up after 1 attempt" in str(caught.value)
    assert fake.sleeps == [] and len(llm.history) == 1


@pytest.mark.anyio
async def test_a_non_retryable_error_is_raised_unchanged_after_one_attempt() -> None:
    refusal = ProviderError("fake: the model refused to answer")
    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(refusal)

    with pytest.raises(ProviderError) as caught:
        await ask(retrying(llm, fake))
    assert caught.value is refusal
    assert fake.sleeps == [] and len(llm.history) == 1


@pytest.mark.anyio
async def test_a_non_retryable_error_after_retries_says_how_many_attempts_were_made() -> None:
    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(busy(), ProviderError("fake: HTTP 400"))

    with pytest.raises(ProviderError, match=r"^fake: HTTP 400 \(after 2 attempts\)$") as caught:
        await ask(retrying(llm, fake))
    assert caught.value.retryable is False
    assert len(llm.history) == 2


@pytest.mark.anyio
async def test_other_exceptions_are_never_retried() -> None:
    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(RuntimeError("a bug"))

    with pytest.raises(RuntimeError, match="a bug"):
        await ask(retrying(llm, fake))
    assert len(llm.history) == 1


@pytest.mark.anyio
async def test_the_final_error_counts_the_attempts_and_keeps_the_last_one() -> None:
    llm, fake = ScriptedLLM(busy(retry_after=1.0)), FakeTime()

    with pytest.raises(ProviderError, match=r"^fake: HTTP 503 \(gave up after 4 attempts\)$") as caught:
        await ask(retrying(llm, fake, attempts=4))
    assert len(llm.history) == 4 and len(fake.sleeps) == 3
    assert caught.value.retryable is True and caught.value.retry_after == 1.0
    assert isinstance(caught.value.__cause__, ProviderError)


@pytest.mark.anyio
async def test_no_wait_starts_that_would_end_past_the_deadline() -> None:
    llm, fake = ScriptedLLM(busy()), FakeTime()

    with pytest.raises(ProviderError, match=r"gave up after 3 attempts: waiting 4s more would pass the 5s deadline"):
        await ask(retrying(llm, fake, attempts=10, base_delay=1.0, jitter="none", deadline=5.0))
    assert fake.sleeps == [1.0, 2.0]
    assert len(llm.history) == 3


@pytest.mark.anyio
async def test_time_spent_in_attempts_counts_against_the_deadline() -> None:
    fake = FakeTime()

    class SlowBusyLLM(ScriptedLLM):
        async def complete(self, system: str, user: str, *, json_schema: dict[str, object]):  # type: ignore[override]
            fake.now += 3.0  # each attempt takes 3 s of the fake clock
            return await super().complete(system, user, json_schema=json_schema)

    llm = SlowBusyLLM(busy())
    with pytest.raises(ProviderError, match="deadline"):
        await ask(retrying(llm, fake, attempts=10, base_delay=1.0, jitter="none", deadline=10.0))
    assert fake.sleeps == [1.0, 2.0]  # the third attempt ends at 3+1+3+2+3 = 12 s: past the deadline
    assert len(llm.history) == 3


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", [VIRTUAL_TIME_BACKEND])  # the 30 s answer need not be waited for
async def test_the_deadline_cuts_a_hanging_attempt_short(anyio_backend: object) -> None:
    llm = ScriptedLLM(ANSWER, delay=30)
    adapter = RetryingLLM(llm, RetryPolicy(deadline=0.2), clock=loop_clock)
    started = loop_clock()

    with pytest.raises(ProviderError, match=r"no answer within the 0.2s deadline \(gave up after 1 attempt\)"):
        await ask(adapter)
    assert loop_clock() - started == pytest.approx(0.2)  # on the loop's virtual clock: the deadline, not the 30 s


def test_the_decorators_keep_the_name() -> None:
    assert RetryingSearch(StaticSearch(), RetryPolicy()).name == "static"
    assert RetryingLLM(ScriptedLLM(ANSWER, model="m-1"), RetryPolicy()).model == "m-1"


@pytest.mark.anyio
async def test_search_is_retried_by_the_same_rules() -> None:
    search = StaticSearch(failure=busy(retry_after=2.0))
    fake = FakeTime(on_sleep=lambda: setattr(search, "failure", None))  # the provider recovers meanwhile
    adapter = RetryingSearch(search, RetryPolicy(base_delay=1.0), sleep=fake.sleep, random=lambda: 0.0,
                             clock=fake.clock)

    assert await adapter.gather("acme.com") == [
        Evidence(url="https://acme.com/about", title="About acme.com",
                 snippet="acme.com makes and sells packaged snacks and drinks.")
    ]
    assert fake.sleeps == [2.0] and search.queries == ["acme.com", "acme.com"]


def test_a_provider_error_is_not_retryable_unless_said_so() -> None:
    error = ProviderError("plain")
    assert (str(error), error.retryable, error.retry_after) == ("plain", False, None)


@pytest.mark.parametrize("options", [{"attempts": 0}, {"base_delay": -1}, {"jitter": "some"}, {"deadline": 0}])
def test_nonsense_policies_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**options)  # type: ignore[arg-type]


@given(
    base=st.floats(0, 100), cap=st.floats(0, 100), retry=st.integers(1, 5000), draw=st.floats(0, 1, exclude_max=True),
    jitter=st.sampled_from(["full", "none"]), retry_after=st.none() | st.floats(0, 60),
)
def test_every_delay_lies_between_the_floor_and_the_cap(
    base: float, cap: float, retry: int, draw: float, jitter: str, retry_after: float | None
) -> None:
    policy = RetryPolicy(base_delay=base, max_delay=cap, jitter=jitter)  # type: ignore[arg-type]
    backoff = policy.backoff(retry, draw)
    assert 0 <= backoff <= cap
    assert backoff <= policy.backoff(retry + 1, draw)
    delay = policy.delay(retry, draw, retry_after)
    assert (retry_after or 0) <= delay <= max(cap, retry_after or 0)


NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after": " 1.5 "}, 1.5),
        ({"Retry-After": "7", "retry-after-ms": "250"}, 0.25),
        ({"Retry-After": formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"Retry-After": formatdate(NOW - 30, usegmt=True)}, 0.0),
        ({"Retry-After": "soon"}, None),
        ({"Retry-After": "-5"}, None),
        ({"Retry-After": "inf"}, None),
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": "9" * 400}, None),
        ({"Retry-After": "\u0663"}, None),  # ARABIC-INDIC DIGIT THREE: a digit to float(), not to HTTP
        ({"Retry-After": "7", "retry-after-ms": "\uff12\uff15\uff10"}, 7.0),  # fullwidth "250" is no number
        ({"Retry-After": ""}, None),
        ({"Content-Type": "application/json"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(headers: dict[str, str] | None, seconds: float | None) -> None:
    assert retry_after_seconds(headers, now=NOW) == seconds


@given(st.text(max_size=60), st.text(max_size=20))
def test_any_retry_after_value_reads_as_none_or_a_finite_wait(value: str, millis: str) -> None:
    for headers in ({"Retry-After": value}, {"Retry-After-Ms": millis}):
        seconds = retry_after_seconds(headers, now=NOW)
        assert seconds is None or (math.isfinite(seconds) and seconds >= 0)


@pytest.mark.anyio
async def test_a_tally_counts_retries_by_cause_and_keeps_them_out_of_the_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from firmsift.adapters.decorators.retrier import RetryTally
    from firmsift.domain.errors import FailureCause

    llm, fake, tally = ScriptedLLM(ANSWER), FakeTime(), RetryTally()
    llm.enqueue(ProviderError("slow", retryable=True, cause=FailureCause.TIMEOUT), busy(),
                ProviderError("slow", retryable=True, cause=FailureCause.TIMEOUT))
    retried = RetryingLLM(llm, RetryPolicy(), sleep=fake.sleep, random=lambda: 0.0, clock=fake.clock, tally=tally)

    with caplog.at_level("DEBUG", logger="firmsift.adapters.decorators.retrier"):
        assert await ask(retried) == ANSWER
    assert tally.summary() == "3 retries (timeout 2, other 1)"
    assert [r.levelname for r in caplog.records] == ["DEBUG"] * 3
    assert [r.cause for r in caplog.records] == ["timeout", "other", "timeout"]
    assert RetryTally().summary() == "no retries"


@pytest.mark.anyio
async def test_without_a_tally_each_retry_is_a_warning_naming_its_cause(caplog: pytest.LogCaptureFixture) -> None:
    from firmsift.domain.errors import FailureCause

    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(ProviderError("429", retryable=True, cause=FailureCause.RATE_LIMITED))
    with caplog.at_level("WARNING", logger="firmsift.adapters.decorators.retrier"):
        await ask(retrying(llm, fake))
    [record] = caplog.records
    assert record.levelname == "WARNING" and record.cause == "rate limited"


@pytest.mark.anyio
async def test_the_final_error_keeps_the_cause() -> None:
    from firmsift.domain.errors import FailureCause

    llm, fake = ScriptedLLM(ProviderError("slow", retryable=True, cause=FailureCause.TIMEOUT)), FakeTime()
    with pytest.raises(ProviderError) as caught:
        await ask(retrying(llm, fake, attempts=2))
    assert caught.value.cause is FailureCause.TIMEOUT


def billed(prompt_tokens: int | None, completion_tokens: int | None, *, retryable: bool) -> ProviderError:
    """A failed attempt whose answer came back and was billed (or, with None, reported no tokens)."""
    return ProviderError("fake: cut off", retryable=retryable, prompt_tokens=prompt_tokens,
                         completion_tokens=completion_tokens)


@pytest.mark.anyio
async def test_the_tokens_of_every_billed_attempt_are_added_to_the_answer() -> None:
    llm, fake = ScriptedLLM(ANSWER, tokens=(100, 20)), FakeTime()
    llm.enqueue(billed(30, 5, retryable=True), busy(), billed(7, None, retryable=True))

    completion = await retrying(llm, fake).complete("system", "Domain: acme.com\n", json_schema=SCHEMA)
    assert (completion.text, completion.prompt_tokens, completion.completion_tokens) == (ANSWER, 137, 25)


@pytest.mark.anyio
async def test_a_call_that_gives_up_carries_the_tokens_of_every_billed_attempt() -> None:
    llm, fake = ScriptedLLM(ANSWER), FakeTime()
    llm.enqueue(billed(30, 5, retryable=True), busy(), billed(40, 6, retryable=False))

    with pytest.raises(ProviderError, match=r"after 3 attempts") as caught:
        await ask(retrying(llm, fake))
    assert (caught.value.prompt_tokens, caught.value.completion_tokens) == (70, 11)


@pytest.mark.anyio
async def test_attempts_that_reported_no_tokens_leave_the_answer_as_the_provider_reported_it() -> None:
    for tokens, expected in (((100, 20), (100, 20)), (None, (None, None))):
        llm, fake = ScriptedLLM(ANSWER, tokens=tokens), FakeTime()
        llm.enqueue(busy(), busy())
        completion = await retrying(llm, fake).complete("system", "Domain: acme.com\n", json_schema=SCHEMA)
        assert (completion.prompt_tokens, completion.completion_tokens) == expected
