"""Which evidence is worth handing to the model, and which search provider it came from."""

from __future__ import annotations

from collections.abc import Iterable

from firmsift.domain.model import Evidence


def is_useful(evidence: Iterable[Evidence]) -> bool:
    """At least one item says something (a title or a snippet that is not blank): a bare URL
    tells the model nothing, so a search chain asks its next provider instead."""
    return any(item.title.strip() or item.snippet.strip() for item in evidence)


def evidence_provider(evidence: Iterable[Evidence]) -> str | None:
    """The provider(s) the evidence came from, as its items name them: one name, or several in
    the order first seen, comma-separated; None when no item names one (no evidence at all)."""
    names = dict.fromkeys(item.provider for item in evidence if item.provider)
    return ",".join(names) or None
