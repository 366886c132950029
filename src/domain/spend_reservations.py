"""Reserving a domain's expected LLM cost against the daily limits before its call, and what a
call is expected to cost: without reservations, every call started before the first one's cost
was recorded passed the limit check (40 calls for a key limited to a fraction of one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

RESERVATION_LIFETIME = timedelta(minutes=15)  # a worker that died holding one: its hold lapses then
LEARNING_WEIGHT = 0.2  # how much each settled cost moves the expectation (an exponential average)


@dataclass(frozen=True)
class SpendReservation:
    """A hold of `amount_usd` on `owner`'s daily spend (and on everyone's) until it is settled or
    `expires_at` passes; the spend a limit is checked against is what finished plus what is held."""

    id: str
    owner: str
    amount_usd: float
    expires_at: datetime


class ExpectedCost:
    """What one domain's paid path is expected to cost, per classifier: `prior(classifier)` (its
    prompt's length priced) until calls are settled, then an exponential average of their costs."""

    def __init__(self, prior: Callable[[str], float]) -> None:
        self._prior = prior
        self._learned: dict[str, float] = {}

    def of(self, classifier: str) -> float:
        if classifier not in self._learned:
            self._learned[classifier] = max(self._prior(classifier), 0.0)
        return self._learned[classifier]

    def learn(self, classifier: str, cost: float) -> None:
        before = self.of(classifier)
        self._learned[classifier] = before + LEARNING_WEIGHT * (cost - before)
