"""The search chain on in-memory providers: who is asked, in which order, and whose evidence wins."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.adapters.memory.providers import StaticSearch
from firmsift.domain.errors import ProviderError
from firmsift.domain.evidence_status import after_failed_search, failed_chain_reason
from firmsift.domain.evidence_use import evidence_provider, is_useful
from firmsift.domain.model import Evidence
from firmsift.services.search_chain import SearchChain

pytestmark = pytest.mark.anyio

PAGE = Evidence("https://a.com/", "A", "A makes snacks.")
BARE = Evidence("https://a.com/")  # a URL alone: nothing for the model to read


def failing(name: str, message: str | None = None) -> StaticSearch:
    return StaticSearch(ProviderError(message or f"{name}: search answered HTTP 503"), name=name)


def finding(name: str, *evidence: Evidence) -> StaticSearch:
    return StaticSearch(name=name, evidence=list(evidence))


async def test_the_first_useful_evidence_wins_and_later_providers_are_not_asked() -> None:
    first, second = finding("homepage", PAGE), finding("searxng", PAGE)
    found = await SearchChain([first, second]).gather("a.com")
    assert found == [Evidence("https://a.com/", "A", "A makes snacks.", provider="homepage")]
    assert first.queries == ["a.com"] and second.queries == []


async def test_a_failing_provider_hands_over_to_the_next() -> None:
    second = finding("searxng", PAGE)
    found = await SearchChain([failing("homepage"), second]).gather("a.com")
    assert evidence_provider(found) == "searxng" and second.queries == ["a.com"]


async def test_a_provider_that_finds_nothing_hands_over_to_the_next() -> None:
    found = await SearchChain([finding("homepage"), finding("brave", PAGE)]).gather("a.com")
    assert evidence_provider(found) == "brave"


async def test_evidence_that_says_nothing_hands_over_but_is_kept_when_nothing_better_comes() -> None:
    found = await SearchChain([finding("homepage", BARE), finding("searxng", PAGE)]).gather("a.com")
    assert evidence_provider(found) == "searxng"
    found = await SearchChain([finding("homepage", BARE), failing("searxng"), finding("tavily")]).gather("a.com")
    assert found == [Evidence("https://a.com/", provider="homepage")]


@pytest.mark.parametrize("order", [("homepage", "searxng", "tavily"), ("tavily", "homepage", "searxng")])
async def test_providers_are_asked_in_the_order_given(order: tuple[str, ...]) -> None:
    asked: list[str] = []

    class Recording(StaticSearch):
        async def gather(self, domain: str) -> list[Evidence]:
            asked.append(self.name)
            return await super().gather(domain)

    members = [Recording(ProviderError(f"{name}: down"), name=name) for name in order[:-1]]
    members.append(Recording(name=order[-1], evidence=[PAGE]))
    chain = SearchChain(members)
    assert chain.name == ",".join(order)
    assert evidence_provider(await chain.gather("a.com")) == order[-1]
    assert asked == list(order)


async def test_when_every_provider_fails_the_error_names_each_failure() -> None:
    chain = SearchChain([failing("homepage", "homepage: a.com is unreachable over https and http"),
                         failing("searxng", "searxng: search answered HTTP 503"), finding("brave")])
    with pytest.raises(ProviderError) as raised:
        await chain.gather("a.com")
    assert str(raised.value) == ("homepage: a.com is unreachable over https and http; "
                                 "searxng: search answered HTTP 503; brave: found nothing")
    assert after_failed_search(raised.value) == f"none: {raised.value}"


async def test_a_chain_of_one_raises_its_providers_own_error() -> None:
    error = ProviderError("searxng: could not resolve host", retryable=True)
    with pytest.raises(ProviderError) as raised:
        await SearchChain([StaticSearch(error, name="searxng")]).gather("a.com")
    assert raised.value is error


async def test_when_every_provider_finds_nothing_there_is_no_evidence() -> None:
    assert await SearchChain([finding("homepage"), finding("searxng")]).gather("a.com") == []


async def test_an_error_that_is_not_a_provider_error_is_not_swallowed() -> None:
    class Broken(StaticSearch):
        async def gather(self, domain: str) -> list[Evidence]:
            raise KeyError("bug")

    second = finding("searxng", PAGE)
    with pytest.raises(KeyError):
        await SearchChain([Broken(name="homepage"), second]).gather("a.com")
    assert second.queries == []


def test_a_chain_needs_a_provider() -> None:
    with pytest.raises(ValueError, match="at least one"):
        SearchChain([])


# --- the rules the chain applies ------------------------------------------------------------

@pytest.mark.parametrize(("evidence", "useful"), [
    ([], False), ([BARE], False), ([Evidence("https://a.com/", " ", "\n\t")], False),
    ([BARE, Evidence("https://a.com/", "A")], True), ([Evidence("https://a.com/", "", "snacks")], True),
])
def test_evidence_is_useful_when_some_item_has_text(evidence: list[Evidence], useful: bool) -> None:
    assert is_useful(evidence) is useful


def test_the_provider_of_evidence_is_each_name_once_in_order() -> None:
    assert evidence_provider([]) is None and evidence_provider([PAGE]) is None
    marked = [Evidence("u", provider="searxng"), Evidence("v", provider="homepage"), Evidence("w", provider="searxng")]
    assert evidence_provider(marked) == "searxng,homepage"


def test_a_failure_that_already_names_its_provider_is_not_named_twice() -> None:
    assert failed_chain_reason([("homepage", "homepage: refused"), ("brave", "HTTP 429 (rate limited)")]) == \
        "homepage: refused; brave: HTTP 429 (rate limited)"


@given(st.lists(st.tuples(st.sampled_from(["homepage", "searxng", "tavily", "brave"]), st.text(max_size=600)),
                min_size=1, max_size=4))
def test_a_failed_chains_reason_fits_the_limit_and_names_every_provider(outcomes: list[tuple[str, str]]) -> None:
    reason = failed_chain_reason(outcomes)
    assert len(reason) <= 200
    position = 0
    for provider, _ in outcomes:  # each provider's name, in order
        position = reason.index(f"{provider}:", position) + 1
