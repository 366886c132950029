"""The pacing rules: turns booked at the announced limits, headers and 429s observed, the fallback
without headers, and a simulated provider bucket that a paced client fills but never overflows."""

from __future__ import annotations

import heapq

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from firmsift.domain.pacing import (
    DECREASE, HEADROOM, INCREASE_PER_CALL, MIN_RATE, PAUSE_WITHOUT_RETRY_AFTER, Observation, PacingState,
    observe, provider_key, request_rate, take_turn, token_rate, unpaced,
)
from firmsift.domain.rate_limit_headers import RateLimitHeaders

NOW = 1_700_000_000.0
MINUTES = 3  # simulated


def test_a_provider_is_known_by_model_and_api_host() -> None:
    assert provider_key("openai/gpt-5.4-mini", None) == "openai/gpt-5.4-mini@default"
    assert provider_key("openai/qwen", "llm.example.com:8443") == "openai/qwen@llm.example.com:8443"


def test_nothing_known_means_no_pacing() -> None:
    state = PacingState()
    assert unpaced(state, None, NOW)
    for _ in range(5):
        state, turn = take_turn(state, NOW, None)
        assert turn.start_at == NOW and turn.tokens_booked == 0


def test_the_ceiling_alone_spaces_calls() -> None:
    state, starts = PacingState(), []
    for _ in range(4):
        state, turn = take_turn(state, NOW, 120.0)
        starts.append(turn.start_at - NOW)
    assert starts == pytest.approx([0, 0.5, 1.0, 1.5])
    assert not unpaced(state, 120.0, NOW)


def test_the_announced_limit_paces_with_headroom_and_the_ceiling_caps_it() -> None:
    state = observe(PacingState(), Observation(NOW, limits=RateLimitHeaders(limit_requests=600)))
    assert request_rate(state, None) == pytest.approx(600 * HEADROOM)
    assert request_rate(state, 100.0) == 100.0


def test_tokens_book_the_running_estimate_and_settle_what_was_billed() -> None:
    state = observe(PacingState(), Observation(NOW, tokens_used=1000,
                                               limits=RateLimitHeaders(limit_tokens=60_000)))
    assert state.tokens_per_call == 1000 and token_rate(state) == pytest.approx(60_000 * HEADROOM)
    state, first = take_turn(state, NOW, None)
    state, second = take_turn(state, NOW, None)
    interval = 1000 * 60 / (60_000 * HEADROOM)
    assert first.tokens_booked == 1000 and second.start_at - first.start_at == pytest.approx(interval)
    # The first call used 3000: the difference is booked too, and the estimate moves towards it.
    later = observe(state, Observation(NOW + 0.1, tokens_booked=1000, tokens_used=3000))
    assert later.next_token_at - state.next_token_at == pytest.approx(2000 * 60 / (60_000 * HEADROOM))
    assert 1000 < later.tokens_per_call < 3000


def test_what_remains_moves_the_bookings_back() -> None:
    state = PacingState(limit_requests=60, next_request_at=NOW)
    drained = observe(state, Observation(NOW, limits=RateLimitHeaders(remaining_requests=0)))
    assert drained.next_request_at == pytest.approx(NOW + 1.0)  # one request refills in a second
    plenty = observe(state, Observation(NOW, limits=RateLimitHeaders(remaining_requests=50)))
    assert plenty.next_request_at == NOW


def test_a_budget_used_up_without_a_limit_waits_for_its_reset() -> None:
    seen = Observation(NOW, limits=RateLimitHeaders(remaining_tokens=0, reset_tokens=7.5))
    assert observe(PacingState(), seen).blocked_until == NOW + 7.5


def test_a_429_pauses_everyone_for_its_retry_after() -> None:
    limits = RateLimitHeaders(limit_requests=100, remaining_requests=0)
    state = observe(PacingState(), Observation(NOW, rate_limited=True, retry_after=4.0, limits=limits))
    assert state.blocked_until == NOW + 4.0 and state.rate_limited == 1 and state.fallback_rate is None
    state, turn = take_turn(state, NOW + 1, None)
    assert turn.start_at == NOW + 4.0


def test_without_headers_a_429_halves_the_recent_rate_and_successes_win_it_back() -> None:
    state = PacingState()
    for second in range(30):
        state, _ = take_turn(state, NOW + second, None)  # 30 calls in 30 s: 60 a minute
    state = observe(state, Observation(NOW + 30, rate_limited=True))
    assert state.fallback_rate == pytest.approx(60 * DECREASE, rel=0.05)
    assert state.blocked_until == NOW + 30 + PAUSE_WITHOUT_RETRY_AFTER
    halved = state.fallback_rate
    state = observe(state, Observation(NOW + 31))
    assert state.fallback_rate == pytest.approx(halved + INCREASE_PER_CALL)
    for _ in range(20):
        state = observe(state, Observation(NOW + 32, rate_limited=True))
    assert state.fallback_rate == MIN_RATE


@given(nows=st.lists(st.floats(0, 1000), min_size=1, max_size=40),
       limit=st.integers(1, 100_000), ceiling=st.none() | st.floats(1, 100_000),
       blocked=st.floats(0, 2000))
def test_turns_never_start_early_and_never_overlap(nows: list[float], limit: int, ceiling: float | None,
                                                  blocked: float) -> None:
    state = PacingState(limit_requests=limit, blocked_until=NOW + blocked)
    rate = request_rate(state, ceiling)
    previous = None
    for offset in sorted(nows):
        state, turn = take_turn(state, NOW + offset, ceiling)
        assert turn.start_at >= max(NOW + offset, NOW + blocked)
        if previous is not None:
            assert turn.start_at - previous >= 60 / rate - 1e-6  # epoch floats: microsecond precision
        previous = turn.start_at


class ProviderBucket:
    """OpenAI's limiter as the scripted provider runs it: R a minute, refilled continuously."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute, self.level, self.at = per_minute, float(per_minute), 0.0

    def take(self, at: float) -> bool:
        self.level = min(self.per_minute, self.level + (at - self.at) * self.per_minute / 60)
        self.at = at
        if self.level < 1:
            return False
        self.level -= 1
        return True


@settings(max_examples=30, deadline=None)
@given(limit=st.integers(30, 1200), in_flight=st.integers(1, 64), latency=st.floats(0.05, 3.0))
def test_a_paced_client_fills_the_providers_bucket_without_overflowing_it(limit: int, in_flight: int,
                                                                          latency: float) -> None:
    """`in_flight` callers, each taking a turn as soon as its previous call answered; an answer
    (with its headers, or its 429) is observed `latency` seconds after the call started. The
    callers could send twice the limit (the provider, not they, is what binds), and the
    provider's full bucket holds their first calls, sent before any limit is known."""
    assume(in_flight * 60 / latency >= 2 * limit and in_flight <= limit)
    bucket, state = ProviderBucket(limit), PacingState()
    free_at = [0.0] * in_flight  # when each caller is free again
    answers: list[Observation] = []
    refused = accepted = 0
    while True:
        now = heapq.heappop(free_at)
        if now >= MINUTES * 60:
            break
        for seen in sorted((seen for seen in answers if seen.at <= now), key=lambda seen: seen.at):
            state = observe(state, seen)
        answers = [seen for seen in answers if seen.at > now]
        state, turn = take_turn(state, now, None)
        ok = bucket.take(turn.start_at)
        accepted, refused = accepted + ok, refused + (not ok)
        limits = RateLimitHeaders(limit_requests=limit, remaining_requests=int(bucket.level))
        answers.append(Observation(turn.start_at + latency, limits=limits, rate_limited=not ok))
        heapq.heappush(free_at, turn.start_at + latency)
    assert refused == 0
    assert accepted >= 0.95 * limit * MINUTES
