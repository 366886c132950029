"""An LLM decorator that paces each call at the provider's limits, as learned from its answers and
shared with every worker process through a PacingStore."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from firmsift.adapters.decorators.prometheus_metrics import Metrics
from firmsift.domain.clock import Sleep
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.domain.pacing import Observation, PacingState, Turn, observe, take_turn, unpaced
from firmsift.ports.pacing import PacingStore
from firmsift.ports.providers import LLM, Completion

# While nothing paces the calls (no limit learned, no ceiling, no pause), a process takes its
# turns without the store, reading the shared state again at most this often.
UNPACED_RECHECK_SECONDS = 1.0


class PacedLLM:
    """An LLM whose every call (each retry included) first takes its turn in the shared pacing
    state of `key` (the model and API base), sleeps until that turn, and after the answer notes
    what it showed: the provider's rate-limit headers, a 429 and its Retry-After, tokens billed.

    What a call showed is written with the same process's next turn, so each call costs one short
    transaction; a 429 or new limits reach the other processes with that next turn, a fraction
    of a second later at the rates that matter. `ceiling` (requests per minute, shared by all
    processes; None: none) caps the rate whatever the provider announces.
    """

    def __init__(self, llm: LLM, store: PacingStore, *, key: str, ceiling: float | None = None,
                 metrics: Metrics | None = None, clock: Callable[[], float] = time.time,
                 sleep: Sleep = asyncio.sleep) -> None:
        self.inner = llm
        self.model = llm.model
        self.store = store
        self.key = key
        self.ceiling = ceiling or None
        self.metrics = metrics
        self._clock = clock
        self._sleep = sleep
        self._unseen: list[Observation] = []  # answers not yet written to the shared state
        self._known: PacingState | None = None
        self._read_at = -UNPACED_RECHECK_SECONDS

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        turn = await self._take_turn()
        waited = max(0.0, turn.start_at - self._clock())
        if waited:
            await self._sleep(waited)
        if self.metrics is not None and self._known is not None:
            self.metrics.count_pacing(self._known, waited)
        try:
            completion = await self.inner.complete(system, user, json_schema=json_schema)
        except ProviderError as error:
            rate_limited = error.cause is FailureCause.RATE_LIMITED
            if rate_limited and self.metrics is not None:
                self.metrics.llm_rate_limited.inc()
            self._unseen.append(Observation(
                self._clock(), turn.tokens_booked, _billed(error.prompt_tokens, error.completion_tokens),
                error.rate_limits, rate_limited=rate_limited, retry_after=error.retry_after))
            raise
        self._unseen.append(Observation(
            self._clock(), turn.tokens_booked, _billed(completion.prompt_tokens, completion.completion_tokens),
            completion.rate_limits))
        return completion

    async def _take_turn(self) -> Turn:
        now = self._clock()
        unseen, self._unseen = self._unseen, []
        if (self._known is not None and unpaced(self._known, self.ceiling, now)
                and now - self._read_at < UNPACED_RECHECK_SECONDS and not any(seen.news for seen in unseen)):
            return Turn(start_at=now, tokens_booked=0.0)  # what was seen changes nothing: no limit to pace by

        def change(state: PacingState, at: float) -> tuple[PacingState, tuple[PacingState, Turn]]:
            for seen in unseen:
                state = observe(state, seen)
            state, turn = take_turn(state, at, self.ceiling)
            return state, (state, turn)

        self._known, turn = await self.store.update(self.key, change)
        self._read_at = now
        return turn


def _billed(prompt_tokens: int | None, completion_tokens: int | None) -> int | None:
    if prompt_tokens is None:
        return None
    return prompt_tokens + (completion_tokens or 0)
