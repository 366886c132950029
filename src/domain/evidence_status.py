"""How the search for a domain's evidence went, said in one short text beside its answer.

An answer given without evidence is worth less than one resting on pages, and a search that
failed must not pass for one that found nothing: callers see `found`, `none: the search found
nothing` or `none: <why the search failed>`.
"""

from __future__ import annotations

from collections.abc import Sequence

from firmsift.domain.excerpts import excerpt
from firmsift.domain.model import Evidence
from firmsift.domain.outside_text import storable_error

FOUND = "found"
NOTHING_FOUND = "none: the search found nothing"
_REASON_LIMIT = 200


def after_search(evidence: Sequence[Evidence]) -> str:
    """The status of a search that answered: some evidence, or none."""
    return FOUND if evidence else NOTHING_FOUND


def after_failed_search(error: BaseException) -> str:
    """The status of a search that failed, naming why (the provider's words, cut between words)."""
    reason = excerpt(storable_error(error), _REASON_LIMIT) or type(error).__name__
    return f"none: {reason}"
