"""The evidence an LLM question rests on: another classifier's recent evidence for the domain
when there is some (no search paid for twice), else what the search chain finds now."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from firmsift.domain.evidence_status import FOUND, after_failed_search, after_search
from firmsift.domain.evidence_use import evidence_origin, evidence_provider
from firmsift.domain.model import Answer, Evidence

if TYPE_CHECKING:
    from firmsift.ports.providers import Search
    from firmsift.ports.repository import AnswerStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Gathered:
    """Evidence for one question and what its answer says about it."""

    items: list[Evidence]
    status: str  # evidence_status.py: found / none: why
    provider: str | None  # the search provider that found it
    reused_from: str | None = None  # the classifier whose answer's evidence this is; None: searched now
    searched_at: datetime | None = None  # when reused evidence was searched
    seconds: float | None = None  # how long gathering it took (the search, or the look-up of reused evidence)

    def mark(self, answer: Answer) -> Answer:
        """`answer` saying how its evidence was had."""
        return replace(answer, evidence_status=self.status, search_provider=self.provider,
                       evidence_reused_from=self.reused_from, evidence_searched_at=self.searched_at,
                       evidence_seconds=self.seconds)


async def gather_evidence(domain: str, classifier: str, search: Search, answers: AnswerStore, *,
                          reuse_age: timedelta | None, now: datetime) -> Gathered:
    """Evidence for asking `classifier` about `domain`. With `reuse_age`, the evidence of the
    domain's most recently searched answer under another classifier within that age is reused
    as it was stored (evidence_use.may_lend_evidence says which answers lend it); otherwise the
    search chain is asked. A failed search is no error: the question goes without evidence."""
    started = time.monotonic()
    gathered = await _gather(domain, classifier, search, answers, reuse_age=reuse_age, now=now)
    return replace(gathered, seconds=round(time.monotonic() - started, 3))


async def _gather(domain: str, classifier: str, search: Search, answers: AnswerStore, *,
                  reuse_age: timedelta | None, now: datetime) -> Gathered:
    if reuse_age is not None:
        lender = await answers.recent_evidence(domain, classifier, now - reuse_age)
        if lender is not None:
            origin, searched_at = evidence_origin(lender)
            return Gathered(list(lender.evidence), FOUND, lender.search_provider, origin, searched_at)
    try:
        evidence = await search.gather(domain)
    except Exception as error:  # noqa: BLE001 - any search failure: carry on without evidence
        log.warning("search failed, asking without evidence", extra={"domain": domain, "error": str(error)})
        return Gathered([], after_failed_search(error), None)
    return Gathered(evidence, after_search(evidence), evidence_provider(evidence))
