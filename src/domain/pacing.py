"""Pacing LLM calls at the provider's limits: a token bucket fed by its rate-limit headers, with
multiplicative decrease on 429 where it sends none, and the configured rate as a ceiling.

The state is one record per provider key (model and API base), shared by every worker process
through the database, so all its fields are wall-clock epoch seconds. Each call takes a turn:
the generic cell rate algorithm books the next free slot for its request and for the tokens it
is expected to use, and says when it may start. What the answer showed (headers, a 429, tokens
billed) is observed into the state before a later turn.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from firmsift.domain.rate_limit_headers import RateLimitHeaders

# Pace at this share of an announced limit: the rest absorbs clock skew between machines,
# token estimates that fall short and calls the provider counts but we do not see.
HEADROOM = 0.98
# Without headers: halve the rate on a 429, then win back this many requests per minute with
# each call that succeeds (so a rate r recovers by 5% of r per minute of calls).
DECREASE = 0.5
INCREASE_PER_CALL = 0.05
MIN_RATE = 1.0  # requests per minute the fallback never goes below
PAUSE_WITHOUT_RETRY_AFTER = 1.0  # seconds every process waits after a 429 that names no wait
TOKEN_ESTIMATE_WEIGHT = 0.2  # weight of the newest call in the running tokens-per-call estimate
WINDOW_SECONDS = 60.0  # the span the calls are counted over, for the first decrease


@dataclass(frozen=True)
class PacingState:
    """One provider key's pacing, as shared. `next_request_at` and `next_token_at` are the
    cell rate algorithm's theoretical arrival times: no call starts before either."""

    next_request_at: float = 0.0
    next_token_at: float = 0.0
    blocked_until: float = 0.0  # after a 429 or an exhausted budget, every process waits
    limit_requests: int | None = None  # per minute, as the provider announced
    limit_tokens: int | None = None
    tokens_per_call: float | None = None  # running estimate from the usage answers reported
    fallback_rate: float | None = None  # requests per minute after a 429 without headers
    window_started_at: float = 0.0
    calls_in_window: int = 0
    rate_limited: int = 0  # 429s observed in all


@dataclass(frozen=True)
class Turn:
    """A call's slot: when it may start (epoch seconds) and the tokens booked for it."""

    start_at: float
    tokens_booked: float


@dataclass(frozen=True)
class Observation:
    """What one call's answer showed, at `at` (epoch seconds)."""

    at: float
    tokens_booked: float = 0.0
    tokens_used: int | None = None  # prompt + completion, as billed; None: not reported
    limits: RateLimitHeaders | None = None
    rate_limited: bool = False
    retry_after: float | None = None

    @property
    def news(self) -> bool:
        """True when the others must hear of it soon: limits announced or a 429."""
        return self.limits is not None or self.rate_limited


def provider_key(model: str, host: str | None) -> str:
    """The key a provider's pacing is shared under: the model and the API host (no path or
    credentials), "default" for the provider's own endpoint."""
    return f"{model}@{host or 'default'}"


def request_rate(state: PacingState, ceiling: float | None) -> float | None:
    """Requests per minute to pace at: the announced limit less headroom, else the fallback
    learned from 429s, never above the configured ceiling; None: no pacing by requests."""
    rates = [rate for rate in (state.limit_requests and state.limit_requests * HEADROOM,
                               state.fallback_rate, ceiling) if rate]
    return min(rates) if rates else None


def token_rate(state: PacingState) -> float | None:
    """Tokens per minute to pace at: the announced limit less headroom; None: not announced."""
    return state.limit_tokens * HEADROOM if state.limit_tokens else None


def unpaced(state: PacingState, ceiling: float | None, now: float) -> bool:
    """True when nothing paces a call now: no limit known, no ceiling, no pause in force."""
    return request_rate(state, ceiling) is None and token_rate(state) is None and state.blocked_until <= now


def take_turn(state: PacingState, now: float, ceiling: float | None) -> tuple[PacingState, Turn]:
    """Book the next call's slot: it starts at the first moment both its request and its
    expected tokens fit, and no earlier than a pause in force. Bookings never overlap, so
    concurrent callers (in any process) go in turn at the paced rate."""
    requests, tokens = request_rate(state, ceiling), token_rate(state)
    booked = (state.tokens_per_call or 0.0) if tokens else 0.0
    start = max(now, state.blocked_until)
    if requests:
        start = max(start, state.next_request_at)
    if tokens:
        start = max(start, state.next_token_at)
    fresh_window = now - state.window_started_at >= WINDOW_SECONDS
    state = replace(
        state,
        next_request_at=start + 60.0 / requests if requests else state.next_request_at,
        next_token_at=start + booked * 60.0 / tokens if tokens else state.next_token_at,
        window_started_at=now if fresh_window else state.window_started_at,
        calls_in_window=1 if fresh_window else state.calls_in_window + 1,
    )
    return state, Turn(start_at=start, tokens_booked=booked)


def observe(state: PacingState, seen: Observation) -> PacingState:
    """The state once `seen` is taken into account: limits learned, the shared bookings moved
    back to what the provider says remains, a pause after a 429, the token estimate updated."""
    state = _count_tokens(state, seen)
    if seen.limits is not None:
        state = _learn(state, seen.limits, seen.at)
    elif state.fallback_rate is not None and not seen.rate_limited:
        state = replace(state, fallback_rate=state.fallback_rate + INCREASE_PER_CALL)
    if not seen.rate_limited:
        return state
    pause = seen.retry_after if seen.retry_after is not None else PAUSE_WITHOUT_RETRY_AFTER
    state = replace(state, rate_limited=state.rate_limited + 1,
                    blocked_until=max(state.blocked_until, seen.at + pause))
    if seen.limits is None or seen.limits.limit_requests is None and seen.limits.limit_tokens is None:
        state = replace(state, fallback_rate=max(MIN_RATE, _recent_rate(state, seen.at) * DECREASE))
    return state


def _count_tokens(state: PacingState, seen: Observation) -> PacingState:
    if seen.tokens_used is None:
        return state
    previous = state.tokens_per_call
    estimate = (seen.tokens_used if previous is None
                else previous + TOKEN_ESTIMATE_WEIGHT * (seen.tokens_used - previous))
    tokens = token_rate(state)
    # The slot booked the estimate; the provider billed what was used: book the difference too.
    owed = (seen.tokens_used - seen.tokens_booked) * 60.0 / tokens if tokens else 0.0
    return replace(state, tokens_per_call=estimate, next_token_at=state.next_token_at + owed)


def _learn(state: PacingState, limits: RateLimitHeaders, at: float) -> PacingState:
    """Take the announced limits, and never book ahead of what the provider says remains: its
    bucket refills continuously at limit per minute, so `remaining` below what one call needs
    means waiting for the difference to refill."""
    limit_requests = limits.limit_requests or state.limit_requests
    limit_tokens = limits.limit_tokens or state.limit_tokens
    state = replace(state, limit_requests=limit_requests, limit_tokens=limit_tokens)
    if limits.remaining_requests is not None and limit_requests:
        refilled = at + (1 - limits.remaining_requests) * 60.0 / limit_requests
        state = replace(state, next_request_at=max(state.next_request_at, refilled))
    if limits.remaining_tokens is not None and limit_tokens:
        needed = state.tokens_per_call or 1.0
        refilled = at + (needed - limits.remaining_tokens) * 60.0 / limit_tokens
        state = replace(state, next_token_at=max(state.next_token_at, refilled))
    # A budget used up with no announced limit to pace by: wait out its reset.
    for remaining, limit, reset in ((limits.remaining_requests, limit_requests, limits.reset_requests),
                                    (limits.remaining_tokens, limit_tokens, limits.reset_tokens)):
        if remaining == 0 and not limit and reset:
            state = replace(state, blocked_until=max(state.blocked_until, at + reset))
    return state


def _recent_rate(state: PacingState, now: float) -> float:
    """Requests per minute recently sent: the fallback in force, else the calls counted in the
    current window (over at least one second of it)."""
    if state.fallback_rate is not None:
        return state.fallback_rate
    elapsed = max(1.0, now - state.window_started_at)
    return state.calls_in_window * 60.0 / elapsed
