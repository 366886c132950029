"""Search providers as a chain: the next is asked when one fails or finds nothing useful."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from firmsift.domain.errors import ProviderError
from firmsift.domain.evidence_status import PROVIDER_FOUND_NOTHING, failed_chain_reason
from firmsift.domain.evidence_use import is_useful
from firmsift.domain.model import Evidence
from firmsift.domain.outside_text import storable_error
from firmsift.domain.search_providers import chain_name

if TYPE_CHECKING:
    from firmsift.ports.providers import Search

log = logging.getLogger(__name__)


class SearchChain:
    """A Search made of Search ports asked in order, each with its own decorators (retries, rate
    budget, metrics): the first useful evidence (domain/evidence_use.is_useful) wins, and each
    item of it is marked with the provider that found it, so the answer can say whose evidence
    it rests on.

    A member that raises ProviderError, or finds nothing useful, hands over to the next. This is
    also where a member that finds the site blocked will hand over: it raises a ProviderError
    saying so. When no member found anything useful, the first evidence found at all is used
    (a title-less page still beats nothing); when none found any and some failed, the chain
    raises a ProviderError naming each member's failure (a chain of one raises its member's own
    error unchanged, so one provider behaves as it always did); when all simply found nothing,
    there is no evidence. Any other exception is a bug and passes straight through.
    """

    def __init__(self, members: Sequence[Search]) -> None:
        if not members:
            raise ValueError("a search chain needs at least one search provider")
        self.members = tuple(members)
        self.name = chain_name([member.name for member in self.members])

    async def gather(self, domain: str) -> list[Evidence]:
        first_found: list[Evidence] = []
        outcomes: list[tuple[str, str]] = []  # (provider, what happened) of those that gave no evidence
        failures: list[ProviderError] = []
        for member in self.members:
            try:
                found = [replace(item, provider=member.name) for item in await member.gather(domain)]
            except ProviderError as error:
                failures.append(error)
                outcomes.append((member.name, storable_error(error)))
                self._hand_over(member, domain, str(error))
                continue
            if is_useful(found):
                return found
            if not found:
                outcomes.append((member.name, PROVIDER_FOUND_NOTHING))
            first_found = first_found or found
            self._hand_over(member, domain, "nothing useful" if found else PROVIDER_FOUND_NOTHING)
        if first_found or not failures:
            return first_found
        if len(self.members) == 1:
            raise failures[0]
        raise ProviderError(failed_chain_reason(outcomes))

    def _hand_over(self, member: Search, domain: str, why: str) -> None:
        if member is not self.members[-1]:
            log.info("search provider gave no useful evidence, asking the next",
                     extra={"domain": domain, "provider": member.name, "why": why})
