"""One human-answer store suite, run against the in-memory store and the SQLite and PostgreSQL
stores: set, replace, undo back through the history to "no human answer", look-ups and keyset paging."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

from firmsift.domain.human_answers import HumanAnswer

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 12, 1, 9, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def store(backend_container):  # noqa: ANN001, ANN201
    """The human-answer store on each backend."""
    return backend_container.human_answers()


def human(domain: str, answer: bool, note: str, *, classifier: str = "cpg", by: str | None = "key_a",
          minutes: int = 0) -> HumanAnswer:
    return HumanAnswer(domain, classifier, answer, note, by, NOW + timedelta(minutes=minutes))


async def test_a_human_answer_is_stored_and_found_by_domain_and_classifier(store) -> None:
    first = human("acme.com", True, "sells soap")
    assert await store.set_human_answer(first) is None
    assert await store.human_answers(["acme.com", "other.com"], "cpg") == {"acme.com": first}
    assert await store.human_answers(["acme.com"], "saas") == {}
    assert await store.human_answers([], "cpg") == {}


async def test_a_correction_replaces_the_current_one_and_returns_it(store) -> None:
    first, second = human("acme.com", True, "sells soap"), human("acme.com", False, "a bank", by=None, minutes=5)
    await store.set_human_answer(first)
    assert await store.set_human_answer(second) == first
    assert await store.human_answers(["acme.com"], "cpg") == {"acme.com": second}


async def test_undo_walks_back_through_every_change_to_no_human_answer(store) -> None:
    first, second, third = (human("acme.com", True, "soap"), human("acme.com", False, "bank", minutes=1),
                            human("acme.com", True, "soap after all", minutes=2))
    for answer in (first, second, third):
        await store.set_human_answer(answer)
    assert await store.remove_human_answer("acme.com", "cpg") == third
    assert await store.human_answers(["acme.com"], "cpg") == {"acme.com": second}
    assert await store.remove_human_answer("acme.com", "cpg") == second
    assert await store.human_answers(["acme.com"], "cpg") == {"acme.com": first}
    assert await store.remove_human_answer("acme.com", "cpg") == first
    assert await store.human_answers(["acme.com"], "cpg") == {}
    assert await store.remove_human_answer("acme.com", "cpg") is None


async def test_undo_after_a_new_first_correction_does_not_bring_back_an_undone_one(store) -> None:
    await store.set_human_answer(human("acme.com", True, "soap"))
    await store.remove_human_answer("acme.com", "cpg")
    fresh = human("acme.com", False, "bank", minutes=3)
    assert await store.set_human_answer(fresh) is None
    assert await store.remove_human_answer("acme.com", "cpg") == fresh
    assert await store.human_answers(["acme.com"], "cpg") == {}


async def test_undo_touches_only_its_own_domain_and_classifier(store) -> None:
    mine, other_classifier, other_domain = (human("acme.com", True, "soap"),
                                            human("acme.com", False, "not software", classifier="saas"),
                                            human("beta.com", False, "bank"))
    for answer in (mine, other_classifier, other_domain):
        await store.set_human_answer(answer)
    assert await store.remove_human_answer("acme.com", "cpg") == mine
    assert await store.human_answers(["acme.com"], "saas") == {"acme.com": other_classifier}
    assert await store.human_answers(["beta.com"], "cpg") == {"beta.com": other_domain}


async def test_listing_pages_by_classifier_then_domain(store) -> None:
    answers = [human(f"d{n}.com", n % 2 == 0, f"note {n}", classifier=c) for c in ("saas", "cpg") for n in range(5)]
    for answer in answers:
        await store.set_human_answer(answer)
    every = sorted(answers, key=lambda a: a.key)
    pages, after = [], None
    while page := await store.list_human_answers(None, after=after, limit=3):
        pages.append(page)
        after = page[-1].key
    assert [len(p) for p in pages] == [3, 3, 3, 1]
    assert [a for p in pages for a in p] == every
    assert await store.list_human_answers("saas", after=None, limit=100) == [a for a in every if a.classifier == "saas"]
    assert await store.list_human_answers("cpg", after=("cpg", "d2.com"), limit=100) == [
        a for a in every if a.classifier == "cpg" and a.domain > "d2.com"]


async def test_many_domains_are_looked_up_at_once(store) -> None:
    for n in range(0, 1200, 100):
        await store.set_human_answer(human(f"d{n}.com", True, "soap"))
    found = await store.human_answers([f"d{n}.com" for n in range(1200)], "cpg")
    assert sorted(found) == sorted(f"d{n}.com" for n in range(0, 1200, 100))


async def test_concurrent_corrections_of_one_domain_each_keep_their_history(store) -> None:
    corrections = [human("acme.com", n % 2 == 0, f"note {n}", minutes=n) for n in range(6)]
    await asyncio.gather(*(store.set_human_answer(c) for c in corrections))
    undone = [await store.remove_human_answer("acme.com", "cpg") for _ in corrections]
    # Whatever order the writers took turns in, each change was recorded once: undoing six times
    # removes each correction exactly once and leaves no human answer.
    assert sorted(undone, key=lambda a: a.note) == corrections
    assert await store.human_answers(["acme.com"], "cpg") == {}
