"""In-memory human answers: the current ones in a dict, the history as a stack per key."""

from __future__ import annotations

from collections.abc import Iterable

from firmsift.domain.human_answers import HumanAnswer


class InMemoryHumanAnswers:
    """Implements HumanAnswerStore."""

    def __init__(self) -> None:
        self.current: dict[tuple[str, str], HumanAnswer] = {}  # (classifier, domain) -> answer
        self.replaced: dict[tuple[str, str], list[HumanAnswer | None]] = {}  # what each change replaced, oldest first

    async def set_human_answer(self, answer: HumanAnswer) -> HumanAnswer | None:
        previous = self.current.get(answer.key)
        self.replaced.setdefault(answer.key, []).append(previous)
        self.current[answer.key] = answer
        return previous

    async def remove_human_answer(self, domain: str, classifier: str) -> HumanAnswer | None:
        key = (classifier, domain)
        removed = self.current.pop(key, None)
        if removed is None:
            return None
        history = self.replaced.get(key, [])
        restored = history.pop() if history else None
        if restored is not None:
            self.current[key] = restored
        return removed

    async def human_answers(self, domains: Iterable[str], classifier: str) -> dict[str, HumanAnswer]:
        found = (self.current.get((classifier, domain)) for domain in domains)
        return {answer.domain: answer for answer in found if answer is not None}

    async def list_human_answers(self, classifier: str | None, *, after: tuple[str, str] | None,
                                 limit: int) -> list[HumanAnswer]:
        keys = sorted(key for key in self.current
                      if (classifier is None or key[0] == classifier) and (after is None or key > after))
        return [self.current[key] for key in keys[:limit]]
