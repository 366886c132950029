"""The human-answer port: people's corrections per (domain, classifier), with the history that
lets each one be undone."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from firmsift.domain.human_answers import HumanAnswer


class HumanAnswerStore(Protocol):
    async def set_human_answer(self, answer: HumanAnswer) -> HumanAnswer | None:
        """Make `answer` the human answer of its (domain, classifier) and return the one it
        replaced (None: there was none). The replaced one (or its absence) is kept in the history,
        so remove_human_answer can restore it. One writer at a time per (domain, classifier)."""

    async def remove_human_answer(self, domain: str, classifier: str) -> HumanAnswer | None:
        """Undo the latest change: remove the current human answer of (domain, classifier),
        restore what it replaced (an earlier human answer, or none) and return the removed one;
        None, with nothing changed, when there is no human answer to remove."""

    async def human_answers(self, domains: Iterable[str], classifier: str) -> dict[str, HumanAnswer]:
        """The current human answers of `classifier` among `domains`, keyed by domain."""

    async def list_human_answers(self, classifier: str | None, *, after: tuple[str, str] | None,
                                 limit: int) -> list[HumanAnswer]:
        """Up to `limit` current human answers (of `classifier`, or of all) ordered by
        (classifier, domain), starting after the key `after` (keyset paging: pass the last key seen)."""
