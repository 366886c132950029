"""The real LLM adapters (litellm's and the direct client), retried and rate-limited, against a
misbehaving OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
import traceback
from email.utils import formatdate
from typing import Any

import pytest

from firmsift.adapters.llm.laddered_llm import LadderedLLM
from firmsift.adapters.decorators.pacing import PacedLLM
from firmsift.adapters.memory.pacing import InMemoryPacing
from firmsift.adapters.decorators.retrier import RetryPolicy
from firmsift.adapters.decorators.retrying import RetryingLLM
from firmsift.domain.errors import ProviderError
from firmsift.entrypoints.wiring.lazy_adapters import make_llm
from firmsift.entrypoints.settings import Settings
from firmsift.ports.providers import LLM, Completion
from tests.support.fake_llm_server import FakeLLMServer, Reply, load_fixture
from tests.support.llm_adapters import MakeLLM, adapter_class, maker
from tests.support.waiting import no_hang

__all__ = ["adapter_class"]  # the fixture every `real_llm` is made with

pytestmark = pytest.mark.anyio

API_KEY = "sk-test-secret"
SCHEMA: dict[str, Any] = {"title": "answer", "type": "object", "properties": {"is_cpg": {"type": "boolean"}}}
ANSWER = '{"is_cpg": true, "confidence": 5, "reasoning": "sells snacks"}'
QUICK = RetryPolicy(attempts=4, base_delay=0.01, jitter="none", deadline=30)


class RecordedSleep:
    """A sleep that remembers every wait it was asked for, and how many requests the server had
    seen when it was asked, instead of waiting: the test checks the code's decisions, not the clock."""

    def __init__(self, fake_llm_server: FakeLLMServer | None = None) -> None:
        self.waits: list[float] = []
        self.requests_seen: list[int] = []
        self._server = fake_llm_server

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self._server is not None:
            self.requests_seen.append(len(self._server.requests))
        await asyncio.sleep(0)


class FrozenTime:
    """The pacing's clock, standing still, and its sleep, recording when each wait would end
    (on that clock) instead of waiting."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now
        self.wakes: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.wakes.append(self.now + seconds)
        await asyncio.sleep(0)


@pytest.fixture
def real_llm(adapter_class: type[LadderedLLM]) -> MakeLLM:
    """Makes real adapters of each kind (litellm's, the direct client) at an API base."""
    return maker(adapter_class, "openai/fake-model", API_KEY, timeout=10.0)


async def ask(llm: LLM) -> Completion:
    return await llm.complete("You classify companies.", "Domain: acme.com", json_schema=SCHEMA)


async def failure(llm: LLM) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await ask(llm)
    assert API_KEY not in "".join(traceback.format_exception(caught.value))
    return caught.value


# --- what the adapter tells the retry layer ----------------------------------------------


@pytest.mark.parametrize(
    ("status", "headers", "retryable", "retry_after"),
    [
        (429, {"Retry-After": "7"}, True, 7.0),
        (429, {"retry-after-ms": "1500", "Retry-After": "2"}, True, 1.5),
        (503, {"Retry-After": "3"}, True, 3.0),
        (500, {}, True, None),
        (502, {}, True, None),
        (408, {}, True, None),
        (400, {"Retry-After": "7"}, False, None),
        (401, {}, False, None),
        (403, {}, False, None),
        (404, {}, False, None),
    ],
)
async def test_http_failures_say_whether_to_retry_and_when(
    fake_llm_server: FakeLLMServer, status: int, headers: dict[str, str], retryable: bool, retry_after: float | None,
    real_llm: MakeLLM,
) -> None:
    fake_llm_server.enqueue(f"failure quoting {API_KEY}", status=status, headers=headers)
    error = await failure(real_llm(fake_llm_server.base_url))
    assert (error.retryable, error.retry_after) == (retryable, retry_after)


@pytest.mark.parametrize(
    "reply",
    [
        {"body": "{not json"},
        {"body": '{"id": "no choices"}'},
        {"body": ""},
        {"content": '{"is_cpg": tr', "finish_reason": "length"},
        {"content": None, "refusal": "I can't help with that."},
        {"content": "  "},
    ],
    ids=["malformed-body", "no-choices", "empty-body", "cut-off", "refusal", "blank"],
)
async def test_unreadable_refused_or_cut_off_answers_are_not_retryable(
    fake_llm_server: FakeLLMServer, reply: dict[str, Any],
    real_llm: MakeLLM,
) -> None:
    fake_llm_server.enqueue(**reply)
    assert (await failure(real_llm(fake_llm_server.base_url))).retryable is False


async def test_timeouts_and_refused_connections_are_retryable(
        fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    fake_llm_server.enqueue(ANSWER, delay=5)
    assert (await failure(real_llm(fake_llm_server.base_url, timeout=0.3))).retryable is True
    closed = FakeLLMServer()
    closed.stop()
    assert (await failure(real_llm(closed.base_url))).retryable is True


# --- retries over the wire ----------------------------------------------------------------


async def test_a_429_with_retry_after_is_waited_out_then_answered(
        fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    fake_llm_server.enqueue("slow down", status=429, headers={"Retry-After": "1"})
    fake_llm_server.enqueue(ANSWER)
    sleep = RecordedSleep(fake_llm_server)

    completion = await ask(RetryingLLM(real_llm(fake_llm_server.base_url), QUICK, sleep=sleep))
    assert completion.text == ANSWER
    # The wait asked for is the Retry-After (not QUICK's 0.01 s backoff), between the two requests.
    assert (sleep.waits, sleep.requests_seen) == ([1.0], [1])
    assert len(fake_llm_server.requests) == 2


async def test_a_503_with_an_http_date_is_waited_out_too(fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    retry_at = int(time.time()) + 20  # an HTTP-date has whole seconds
    fake_llm_server.enqueue("overloaded", status=503, headers={"Retry-After": formatdate(retry_at, usegmt=True)})
    fake_llm_server.enqueue(ANSWER)
    sleep = RecordedSleep(fake_llm_server)

    before = time.time()
    assert (await ask(RetryingLLM(real_llm(fake_llm_server.base_url), QUICK, sleep=sleep))).text == ANSWER
    after = time.time()
    # The wait is until the date, as read at some moment of the call: however long the call took.
    [wait] = sleep.waits
    assert retry_at - after <= wait <= retry_at - before
    assert sleep.requests_seen == [1] and len(fake_llm_server.requests) == 2


async def test_two_500s_then_an_answer(fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    fake_llm_server.enqueue("boom", status=500)
    fake_llm_server.enqueue("boom", status=500)
    fake_llm_server.enqueue(ANSWER)
    sleep = RecordedSleep()

    assert (await ask(RetryingLLM(real_llm(fake_llm_server.base_url), QUICK, sleep=sleep))).text == ANSWER
    assert sleep.waits == [0.01, 0.02]
    assert len(fake_llm_server.requests) == 3


async def test_persistent_500s_give_up_after_the_attempts_without_leaking_the_key(
    fake_llm_server: FakeLLMServer, real_llm: MakeLLM,
) -> None:
    fake_llm_server.default = Reply(f"Incorrect API key provided: {API_KEY}", status=500)

    error = await failure(RetryingLLM(real_llm(fake_llm_server.base_url), QUICK))
    assert "HTTP 500" in str(error) and str(error).endswith("(gave up after 4 attempts)")
    assert len(fake_llm_server.requests) == 4


async def test_a_hanging_server_times_out_each_attempt_then_fails_in_bounded_time(real_llm: MakeLLM) -> None:
    hanging = FakeLLMServer(default=Reply(ANSWER, delay=math.inf))  # no answer until it stops
    sleep = RecordedSleep(hanging)
    # No deadline: only each attempt's own timeout can end it (without it, the call would hang).
    policy = RetryPolicy(attempts=3, base_delay=0.01, jitter="none", deadline=None)
    with hanging as base_url, no_hang():
        error = await failure(RetryingLLM(real_llm(base_url, timeout=0.3), policy, sleep=sleep))

    assert "timed out" in str(error) and "gave up after 3 attempts" in str(error)
    assert len(hanging.requests) == 3
    # Each attempt ended (timed out) before the backoff that follows it: one request, then one wait.
    assert (sleep.waits, sleep.requests_seen) == ([0.01, 0.02], [1, 2])


async def test_a_timed_out_call_to_a_local_server_is_not_retried_so_no_abandoned_work_piles_up() -> None:
    """A single-slot local server (llama-cpp-python) keeps generating for a request its client
    abandoned; a retry would queue behind it and time out in turn. The container marks a local
    API base's timeouts as final: one request, not four."""
    hanging = FakeLLMServer(default=Reply(ANSWER, delay=math.inf))
    async with contextlib.AsyncExitStack() as clients:
        with hanging as base_url:
            settings = Settings(llm_model="openai/fake-model", llm_api_base=base_url, llm_timeout=0.3)
            llm = make_llm(settings, clients)
            error = await failure(RetryingLLM(llm, RetryPolicy(attempts=4, base_delay=0.01)))

        assert len(hanging.requests) == 1
        assert "timed out" in str(error) and "local server" in str(error)
        assert make_llm(Settings(llm_model="gpt-4o-mini", llm_api_key="k"), clients).retry_timeouts is True


async def test_llama_cpp_pythons_500_refusal_is_not_retried_but_answered_in_the_next_format(real_llm: MakeLLM) -> None:
    """The issue's failure: the 500 refusal was retried 4 times and never fell back."""
    fake = FakeLLMServer(refuse={"json_schema": load_fixture("llama-cpp-python-json-schema-refused")})
    with fake as base_url:
        completion = await ask(RetryingLLM(real_llm(base_url), QUICK))

    assert json.loads(completion.text)["is_cpg"] is True
    assert [r.format_kind for r in fake.requests] == ["json_schema", "json_object+schema"]


async def test_the_deadline_bounds_a_hanging_server_across_attempts(real_llm: MakeLLM) -> None:
    hanging = FakeLLMServer(default=Reply(ANSWER, delay=math.inf))  # no answer until it stops
    policy = RetryPolicy(attempts=10, base_delay=0.01, deadline=1.0)
    with hanging as base_url, no_hang():
        error = await failure(RetryingLLM(real_llm(base_url, timeout=0.4), policy))

    # Whether the deadline cut an attempt short or refused a wait that would pass it, it ended the
    # call: an attempt lasts its 0.4 s timeout at least, so at most three began within the 1 s.
    assert "1s deadline" in str(error)
    assert 1 <= len(hanging.requests) <= 3  # not the ten attempts allowed


async def test_a_retry_after_beyond_the_cap_fails_at_once(fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    fake_llm_server.enqueue("come back in an hour", status=429, headers={"Retry-After": "3600"})
    sleep = RecordedSleep(fake_llm_server)

    error = await failure(RetryingLLM(real_llm(fake_llm_server.base_url), QUICK, sleep=sleep))
    assert "asked to wait 3600s" in str(error)
    assert sleep.waits == []  # no wait at all, let alone the hour asked for
    assert len(fake_llm_server.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_client_errors_are_not_retried(fake_llm_server: FakeLLMServer, status: int, real_llm: MakeLLM) -> None:
    fake_llm_server.enqueue("no", status=status)
    error = await failure(RetryingLLM(real_llm(fake_llm_server.base_url), QUICK))
    assert "attempt" not in str(error)
    assert len(fake_llm_server.requests) == 1


async def test_an_unreadable_body_is_not_retried(fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    fake_llm_server.enqueue(body="{not json")
    await failure(RetryingLLM(real_llm(fake_llm_server.base_url), QUICK))
    assert len(fake_llm_server.requests) == 1


async def test_garbage_content_is_returned_for_the_domain_to_judge(
        fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    fake_llm_server.enqueue("Well, I'd say yes-ish?")
    completion = await ask(RetryingLLM(real_llm(fake_llm_server.base_url), QUICK))
    assert completion.text == "Well, I'd say yes-ish?"
    assert len(fake_llm_server.requests) == 1


async def test_an_unreachable_provider_is_retried_then_reported(real_llm: MakeLLM) -> None:
    closed = FakeLLMServer()
    closed.stop()
    error = await failure(RetryingLLM(real_llm(closed.base_url), RetryPolicy(attempts=2, base_delay=0.01)))
    assert "could not reach" in str(error) and "gave up after 2 attempts" in str(error)


# --- the requests-per-minute ceiling of the pacing ------------------------------------------


def paced(llm: LLM, frozen: FrozenTime) -> PacedLLM:
    return PacedLLM(llm, InMemoryPacing(clock=frozen.clock), key="fake-model@127.0.0.1", ceiling=300,  # 0.2 s apart
                    clock=frozen.clock, sleep=frozen.sleep)


async def test_concurrent_calls_beyond_the_ceiling_queue_up(fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    frozen = FrozenTime()
    limited = paced(real_llm(fake_llm_server.base_url), frozen)

    answers = await asyncio.gather(*(ask(limited) for _ in range(4)))
    assert len(answers) == 4 and len(fake_llm_server.requests) == 4  # queued, not refused or stuck
    # All four asked at once: the first goes at once, each other waits for its turn, 0.2 s apart.
    assert sorted(wake - frozen.now for wake in frozen.wakes) == pytest.approx([0.2, 0.4, 0.6])


async def test_each_retry_takes_a_paced_turn_too(fake_llm_server: FakeLLMServer, real_llm: MakeLLM) -> None:
    fake_llm_server.enqueue("boom", status=500)
    frozen = FrozenTime()
    backoff = RecordedSleep(fake_llm_server)
    # The recommended order: retries outside, so every attempt waits for its own slot.
    llm = RetryingLLM(paced(real_llm(fake_llm_server.base_url), frozen), QUICK, sleep=backoff)

    assert (await ask(llm)).text
    assert len(fake_llm_server.requests) == 2
    assert backoff.waits == [0.01]
    # The retry waited for the next turn, 0.2 s after the first attempt's: not just the backoff.
    assert [wake - frozen.now for wake in frozen.wakes] == pytest.approx([0.2])
