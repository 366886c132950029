"""The worker's side of the daily limits: before a domain's paid path, hold its expected cost
against them (what finished plus what is held); once its result is stored, drop the hold and
learn what the call cost. Calls in flight count before they finish, so spend stays within the
limit plus the estimate's error for the calls in flight."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from firmsift.domain.budgets import BudgetExhausted
from firmsift.domain.estimates import TokenHistory, tokens_per_question
from firmsift.domain.model import Classifier
from firmsift.domain.spend_reservations import ExpectedCost
from firmsift.services.budgets import Budgets

if TYPE_CHECKING:
    from firmsift.ports.providers import Pricing


class SpendGate:
    def __init__(self, budgets: Budgets, expected: ExpectedCost) -> None:
        self.budgets = budgets
        self.expected = expected

    async def hold(self, owner: str, classifier: str) -> BudgetExhausted | str | None:
        """A hold of one paid path's expected cost for `owner` (its id; None: no limit applies), or why not."""
        return await self.budgets.reserve(owner, self.expected.of(classifier))

    async def settle(self, hold: str | None, classifier: str, cost_usd: float | None) -> None:
        """The domain's result is stored (with `cost_usd` when this job paid a call): drop its hold."""
        if cost_usd is not None:
            self.expected.learn(classifier, cost_usd)
        if hold is not None:
            await self.budgets.release(hold)


def prompt_cost(pricing: Pricing, model: str, catalog: Mapping[str, Classifier]) -> Callable[[str], float]:
    """What a classifier's question should cost before any was answered: its prompt with typical
    evidence and a typical answer's length (domain/estimates.py), priced; 0 where no price is known."""

    def cost(classifier: str) -> float:
        if classifier not in catalog:
            return 0.0
        tokens = tokens_per_question(TokenHistory(), catalog[classifier])
        return pricing.cost(model, tokens.tokens_in, tokens.tokens_out) or 0.0

    return cost
