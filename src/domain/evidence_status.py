"""How the search for a domain's evidence went, said in one short text beside its answer.

An answer given without evidence is worth less than one resting on pages, and a search that
failed must not pass for one that found nothing: callers see `found`, `none: the search found
nothing` or `none: <why the search failed>`. When a chain of providers failed, the reason names
each provider's failure, every one cut to its share of the limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from firmsift.domain.excerpts import excerpt
from firmsift.domain.model import Evidence
from firmsift.domain.outside_text import storable_error

FOUND = "found"
NOTHING_FOUND = "none: the search found nothing"
PROVIDER_FOUND_NOTHING = "found nothing"  # one provider's outcome, within a failed chain's reason
_REASON_LIMIT = 200
_SEPARATOR = "; "


def after_search(evidence: Sequence[Evidence]) -> str:
    """The status of a search that answered: some evidence, or none."""
    return FOUND if evidence else NOTHING_FOUND


def after_failed_search(error: BaseException) -> str:
    """The status of a search that failed, naming why (the provider's words, cut between words)."""
    reason = excerpt(storable_error(error), _REASON_LIMIT) or type(error).__name__
    return f"none: {reason}"


def failed_chain_reason(outcomes: Sequence[tuple[str, str]]) -> str:
    """Why a chain of search providers gave no evidence, from each (provider, what happened):
    `homepage: <why>; searxng: <why>`, within the reason limit. Each provider gets an equal share,
    so the last is named however long the first one's message is; a message that already starts
    with its provider's name is not prefixed twice."""
    if not outcomes:
        raise ValueError("a failed chain has at least one provider's outcome")
    share = (_REASON_LIMIT - len(_SEPARATOR) * (len(outcomes) - 1)) // len(outcomes)
    parts = []
    for provider, what in outcomes:
        name = f"{provider}:"
        said = " ".join(what.split()).removeprefix(name).strip()
        parts.append(f"{name} {excerpt(said, max(share - len(name) - 1, 1))}".rstrip())
    return _SEPARATOR.join(parts)
