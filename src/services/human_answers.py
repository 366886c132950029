"""Human answers as use-cases: correct an answer, undo the latest correction, list them. The
HTTP API and the `firmsift answers` commands both go through here."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.clock import utc_now
from firmsift.domain.errors import UnknownClassifier
from firmsift.domain.human_answers import HumanAnswer, HumanAnswerNotFound, read_answer_domain, read_human_answer
from firmsift.domain.model import Classifier

if TYPE_CHECKING:
    from firmsift.ports.human_answers import HumanAnswerStore

LIST_PAGE = 500  # human answers read per query when listing them all


@dataclass(frozen=True)
class Corrected:
    """The outcome of a correction: the human answer now stored, the one it replaced (None: there
    was none), and whether anything changed (False: the same answer and note were already stored,
    and stay: `answer` and `replaced` are both that stored one)."""

    answer: HumanAnswer
    replaced: HumanAnswer | None
    changed: bool


@dataclass(frozen=True)
class Undone:
    """The human answer an undo removed, and the one it restored (None: no human answer now)."""

    removed: HumanAnswer
    restored: HumanAnswer | None


async def correct_answer(domain: object, classifier: object, answer: object, note: object, *,
                         corrected_by: str | None, catalog: Mapping[str, Classifier], store: HumanAnswerStore,
                         now: Callable[[], datetime] = utc_now) -> Corrected:
    """Set the human answer of (domain, classifier). Setting the same answer and note again writes
    nothing (so an import run twice changes nothing and leaves nothing more to undo). Raises
    UnknownClassifier or InvalidRequest (every refused value listed)."""
    name = known_classifier(classifier, catalog)
    human = read_human_answer(domain, name, answer, note, corrected_by=corrected_by, corrected_at=now())
    current = (await store.human_answers([human.domain], name)).get(human.domain)
    if human.same_correction(current):
        assert current is not None
        return Corrected(current, current, changed=False)
    replaced = await store.set_human_answer(human)
    return Corrected(human, replaced, changed=True)


async def undo_correction(domain: object, classifier: object, *, catalog: Mapping[str, Classifier],
                          store: HumanAnswerStore) -> Undone:
    """Undo the latest correction of (domain, classifier): what it replaced is back (an earlier
    human answer, or none). Raises HumanAnswerNotFound when there is none to undo."""
    name = known_classifier(classifier, catalog)
    normalized = read_answer_domain(domain)
    removed = await store.remove_human_answer(normalized, name)
    if removed is None:
        raise HumanAnswerNotFound(normalized, name)
    restored = (await store.human_answers([normalized], name)).get(normalized)
    return Undone(removed, restored)


async def all_human_answers(store: HumanAnswerStore, classifier: str | None, *,
                            after: tuple[str, str] | None = None) -> AsyncIterator[HumanAnswer]:
    """Every current human answer (of `classifier`, or of all) by (classifier, domain), from the
    one after the key `after` when given, read a page at a time."""
    while page := await store.list_human_answers(classifier, after=after, limit=LIST_PAGE):
        for human in page:
            yield human
        after = page[-1].key


def known_classifier(name: object, catalog: Mapping[str, Classifier]) -> str:
    """`name` when it is a configured classifier; UnknownClassifier (listing the known ones) otherwise."""
    if not isinstance(name, str) or name not in catalog:
        raise UnknownClassifier(str(name), tuple(sorted(catalog)))
    return name
