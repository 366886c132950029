"""What LLM calls cost: adding up the per-domain figures a job stored into its total."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from firmsift.domain.model import DomainResult, ResultStatus

# Sums of float prices drift in the last digits (0.1 + 0.2); a total is rounded to 1e-12 USD,
# far below any price per token.
_USD_DIGITS = 12


@dataclass(frozen=True)
class Spend:
    """What a set of finished domain results spent on the LLM. `cost_usd` and the token counts
    add up what is known; `cost_unknown_domains` counts the results whose cost is not (tokens
    not reported, a model without a price, a call that failed without a response, or a row
    stored before costs were), so with any of them the figures are lower bounds."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_unknown_domains: int = 0


def total_spend(results: Iterable[DomainResult]) -> Spend:
    """The spend of every finished result (PENDING ones have spent nothing yet). A job's total
    is this over its results; a total over many jobs is this over all of their results."""
    return add_spends(Spend(result.tokens_in or 0, result.tokens_out or 0, result.cost_usd or 0.0,
                            int(result.cost_usd is None))
                      for result in results if result.status is not ResultStatus.PENDING)


def add_spends(spends: Iterable[Spend]) -> Spend:
    """Spends of disjoint sets of results (a database's per-group sums) as one, rounded as total_spend rounds."""
    tokens_in = tokens_out = unknown = 0
    cost = 0.0
    for spend in spends:
        tokens_in += spend.tokens_in
        tokens_out += spend.tokens_out
        cost += spend.cost_usd
        unknown += spend.cost_unknown_domains
    return Spend(tokens_in, tokens_out, round(cost, _USD_DIGITS), unknown)


def add_tokens(first: int | None, second: int | None) -> int | None:
    """Two token counts of one call's attempts added up; None only when neither is known."""
    if first is None:
        return second
    return first if second is None else first + second
