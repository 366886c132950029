"""Which evidence is worth handing to the model, which search provider it came from, and when
another classifier's stored evidence may be reused instead of searching again."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from firmsift.domain.evidence_status import FOUND
from firmsift.domain.model import Answer, Evidence, ResultStatus, Source


def is_useful(evidence: Iterable[Evidence]) -> bool:
    """At least one item says something (a title or a snippet that is not blank): a bare URL
    tells the model nothing, so a search chain asks its next provider instead."""
    return any(item.title.strip() or item.snippet.strip() for item in evidence)


def evidence_provider(evidence: Iterable[Evidence]) -> str | None:
    """The provider(s) the evidence came from, as its items name them: one name, or several in
    the order first seen, comma-separated; None when no item names one (no evidence at all)."""
    names = dict.fromkeys(item.provider for item in evidence if item.provider)
    return ",".join(names) or None


def evidence_origin(answer: Answer) -> tuple[str, datetime]:
    """(the classifier whose answer searched for this answer's evidence, when that search ran).
    Evidence reused from a reuse names the first search, so it never looks younger than it is."""
    if answer.evidence_reused_from is not None and answer.evidence_searched_at is not None:
        return answer.evidence_reused_from, answer.evidence_searched_at
    return answer.classifier, answer.answered_at


def may_lend_evidence(answer: Answer, *, to: str, since: datetime) -> bool:
    """Whether classifier `to` may reuse this stored answer's evidence instead of searching: an
    answer of another classifier that the LLM gave (not FAILED, not ended by the pre-check) on
    evidence a search found, searched at or after `since`. The SQL store's query says the same."""
    return (answer.classifier != to and answer.status is ResultStatus.DONE and answer.source is Source.LLM
            and answer.evidence_status == FOUND and bool(answer.evidence) and evidence_origin(answer)[1] >= since)
