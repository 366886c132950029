"""The real search adapters against what SearXNG, Tavily and Brave really answer.

Each answer is a recorded or documented response (tests/fixtures/providers/search, sources in
its README) replayed by the fake search server, so these tests check our understanding of the
providers rather than the fake's."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from firmsift.adapters.decorators.retrier import RetryPolicy
from firmsift.adapters.decorators.retrying import RetryingSearch
from firmsift.adapters.search.brave import BraveSearch
from firmsift.adapters.search.searxng import SearxngSearch
from firmsift.adapters.search.tavily import TavilySearch
from firmsift.domain.errors import ProviderError
from firmsift.domain.evidence_status import NOTHING_FOUND, after_failed_search
from firmsift.services.search_chain import SearchChain
from tests.support.fake_search_server import SEARCH_FIXTURES, FakeSearchServer, load_fixture

pytestmark = pytest.mark.anyio

API_KEY = "tvly-SECRET-k3y-0f-the-test"
QUICK = RetryPolicy(attempts=3, base_delay=0.01, jitter="none", deadline=30)
ApiSearch = SearxngSearch | TavilySearch | BraveSearch


@pytest.fixture
async def adapters(fake_search_server: FakeSearchServer) -> AsyncIterator[dict[str, ApiSearch]]:
    made: dict[str, ApiSearch] = {
        "searxng": SearxngSearch(fake_search_server.base_url, timeout=5.0),
        "tavily": TavilySearch(API_KEY, base_url=fake_search_server.base_url, timeout=5.0),
        "brave": BraveSearch(API_KEY, base_url=fake_search_server.base_url, timeout=5.0),
    }
    yield made
    for adapter in made.values():
        await adapter.aclose()


async def replayed_failure(server: FakeSearchServer, search: ApiSearch | RetryingSearch,
                           fixture: str) -> ProviderError:
    server.override = load_fixture(fixture)
    with pytest.raises(ProviderError) as caught:
        await search.gather("acme.com")
    assert API_KEY not in str(caught.value)
    return caught.value


@pytest.mark.parametrize("provider", ["searxng", "tavily", "brave"])
async def test_a_real_result_list_with_its_extra_fields_becomes_evidence(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch], provider: str
) -> None:
    fake_search_server.override = load_fixture(f"{provider}-results")
    evidence = await adapters[provider].gather("acme.com")
    assert [(item.url, item.title) for item in evidence] == [
        ("https://acme.com/products", "Acme Corp — Products"),
        ("https://en.wikipedia.org/wiki/Acme_Corporation", "Acme Corporation - Wikipedia"),
    ]
    # Brave marks the matched words with <strong>; the snippet is the visible text.
    assert evidence[0].snippet == ("Acme makes anvils, rocket skates and portable holes for the "
                                   "discerning coyote.")


async def test_searxng_with_json_disabled_tells_the_operator_what_to_change(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch]
) -> None:
    error = await replayed_failure(fake_search_server, adapters["searxng"], "searxng-json-format-disabled")
    assert "HTTP 403" in str(error)
    assert "add json to search.formats in its settings.yml" in str(error)
    assert error.retryable is False


async def test_searxng_whose_engines_all_failed_is_a_failure_naming_them(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch]
) -> None:
    error = await replayed_failure(fake_search_server, adapters["searxng"], "searxng-engines-unresponsive")
    assert str(error).startswith("searxng: no results, and its engines failed: "
                                 "brave (HTTP connection error), duckduckgo (HTTP connection error)")
    assert error.retryable is False
    status = after_failed_search(error)
    assert status != NOTHING_FOUND and "brave (HTTP connection error)" in status


async def test_in_a_chain_failed_engines_are_a_failure_not_nothing_found(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch]
) -> None:
    fake_search_server.override = load_fixture("searxng-engines-unresponsive")  # tavily reads its empty "results"
    chain = SearchChain([adapters["searxng"], adapters["tavily"]])
    with pytest.raises(ProviderError) as caught:
        await chain.gather("acme.com")
    assert str(caught.value).startswith("searxng: no results, and its engines failed: brave (")
    assert str(caught.value).endswith("; tavily: found nothing")


async def test_searxng_limiter_refusal_is_explained_and_not_retried(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch]
) -> None:
    retried = RetryingSearch(adapters["searxng"], QUICK)
    error = await replayed_failure(fake_search_server, retried, "searxng-limiter-too-many-requests")
    assert "HTTP 429" in str(error) and "server.limiter" in str(error) and "pass_ip" in str(error)
    assert error.retryable is False
    assert len(fake_search_server.requests) == 1  # SearXNG's limiter window is an hour: no retry helps


@pytest.mark.parametrize(
    ("fixture", "says", "retryable"),
    [
        ("tavily-key-invalid", "HTTP 401 (check the API key)", False),
        ("tavily-rate-limited", "HTTP 429 (rate limited)", True),
        ("tavily-plan-limit", "HTTP 432 (the plan's usage limit is used up", False),
        ("tavily-pay-as-you-go-limit", "HTTP 433 (the pay-as-you-go limit is reached", False),
    ],
)
async def test_tavily_failures_say_what_is_wrong(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch], fixture: str, says: str, retryable: bool
) -> None:
    error = await replayed_failure(fake_search_server, adapters["tavily"], fixture)
    assert str(error).startswith(f"tavily: search answered {says}")
    assert error.retryable is retryable


async def test_brave_refusing_the_key_is_a_key_problem(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch]
) -> None:
    error = await replayed_failure(fake_search_server, adapters["brave"], "brave-token-invalid")
    assert str(error) == "brave: search answered HTTP 422 (check the API key: SUBSCRIPTION_TOKEN_INVALID)"
    assert error.retryable is False


async def test_brave_rate_limit_waits_for_the_window_its_headers_name(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch]
) -> None:
    error = await replayed_failure(fake_search_server, adapters["brave"], "brave-rate-limited")
    assert "HTTP 429" in str(error) and "RATE_LIMITED" in str(error)
    assert (error.retryable, error.retry_after) == (True, 1.0)  # X-RateLimit-Reset: 1, 1419704


async def test_brave_used_up_monthly_quota_is_not_retried(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch]
) -> None:
    retried = RetryingSearch(adapters["brave"], QUICK)
    error = await replayed_failure(fake_search_server, retried, "brave-quota-limited")
    assert "HTTP 429" in str(error) and "quota" in str(error) and "QUOTA_LIMITED" in str(error)
    assert error.retryable is False
    assert len(fake_search_server.requests) == 1


async def test_brave_rate_limit_is_waited_out_then_answered(
    fake_search_server: FakeSearchServer, adapters: dict[str, ApiSearch]
) -> None:
    fake_search_server.override = load_fixture("brave-rate-limited")
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        fake_search_server.override = load_fixture("brave-results")

    evidence = await RetryingSearch(adapters["brave"], QUICK, sleep=sleep).gather("acme.com")
    assert [item.url for item in evidence][:1] == ["https://acme.com/products"]
    assert waits == [1.0]


def test_every_fixture_is_listed_with_its_source() -> None:
    readme = (SEARCH_FIXTURES / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([\w-]+)\.json` \|", readme, flags=re.MULTILINE))
    assert listed == {path.stem for path in Path(SEARCH_FIXTURES).glob("*.json")}
