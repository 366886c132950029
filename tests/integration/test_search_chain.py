"""A chain of the real search adapters, with the worker's decorators, against the loopback fake
search server: the first provider fails or finds nothing, the next one's evidence is used."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from firmsift.adapters.decorators.prometheus_metrics import Metrics
from firmsift.adapters.decorators.retrier import RetryPolicy
from firmsift.adapters.search.homepage import HomepageSearch
from firmsift.adapters.search.searxng import SearxngSearch
from firmsift.adapters.search.tavily import TavilySearch
from firmsift.domain.errors import ProviderError
from firmsift.domain.evidence_use import evidence_provider
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.external import worker_search_chain
from firmsift.entrypoints.settings import Settings
from firmsift.ports.providers import Search
from firmsift.services.search_chain import SearchChain
from tests.support.fake_search_server import FakeSearchServer, Reply

pytestmark = pytest.mark.anyio

QUICK = RetryPolicy(attempts=2, base_delay=0.01, jitter="none", deadline=120)
# No test here is about a slow answer: a call's time limit is far above what a loaded machine takes
# (at 2 s, beside two CPU-burning loops, a fake server's thread once answered after the client gave up).
CALL_TIMEOUT = 30.0


@pytest.fixture
async def adapters(fake_search_server: FakeSearchServer) -> AsyncIterator[dict[str, Search]]:
    """The real homepage reader (example.com pointed at the fake server), SearXNG and Tavily."""

    async def to_loopback(host: str, port: int) -> list[str]:
        if host == "example.com":
            return ["127.0.0.1"]
        raise ProviderError(f"test resolver does not know {host}")

    made = {
        "homepage": HomepageSearch(allow_private_addresses=True, resolver=to_loopback, port=fake_search_server.port,
                                   timeout=CALL_TIMEOUT),
        "searxng": SearxngSearch(fake_search_server.base_url, timeout=CALL_TIMEOUT),
        "tavily": TavilySearch("tvly-key", base_url=fake_search_server.base_url, timeout=CALL_TIMEOUT),
    }
    yield made
    for adapter in made.values():
        await adapter.aclose()


def chain(adapters: dict[str, Search], *names: str, metrics: Metrics | None = None) -> SearchChain:
    return worker_search_chain([adapters[name] for name in names], QUICK, 0, metrics or Metrics())


def calls(metrics: Metrics, provider: str, outcome: str) -> float | None:
    return metrics.registry.get_sample_value("firmsift_search_calls_total", {"provider": provider, "outcome": outcome})


async def test_a_homepage_that_fails_hands_over_to_searxng(adapters: dict[str, Search],
                                                           fake_search_server: FakeSearchServer) -> None:
    fake_search_server.add_page("example.com", "/", Reply(status=503, body=b"<h1>down</h1>"))
    metrics = Metrics()
    found = await chain(adapters, "homepage", "searxng", metrics=metrics).gather("example.com")
    assert evidence_provider(found) == "searxng" and found[0].url == "https://example.com/about"
    assert calls(metrics, "homepage", "error") == 1 and calls(metrics, "searxng", "ok") == 1
    assert calls(metrics, "homepage", "ok") is None


async def test_a_homepage_with_nothing_to_read_hands_over_too(adapters: dict[str, Search],
                                                              fake_search_server: FakeSearchServer) -> None:
    fake_search_server.add_html("example.com", "/", "<html><body><script>app()</script></body></html>")
    found = await chain(adapters, "homepage", "tavily").gather("example.com")
    assert evidence_provider(found) == "tavily"


async def test_the_order_given_is_the_order_asked(adapters: dict[str, Search],
                                                  fake_search_server: FakeSearchServer) -> None:
    fake_search_server.add_html("example.com", "/", "<title>Example Foods</title><p>Crisps and cereal.</p>")
    fake_search_server.override = Reply(status=429, headers={"Retry-After": "0"})  # every search API is rate limited
    found = await chain(adapters, "searxng", "tavily", "homepage").gather("example.com")
    assert evidence_provider(found) == "homepage" and found[0].title == "Example Foods"
    apis = [r for r in fake_search_server.requests if r.path == "/search"]
    assert [r.method for r in apis] == ["GET", "GET", "POST", "POST"]  # searxng retried, then tavily retried


async def test_when_all_fail_the_error_names_each_provider(adapters: dict[str, Search],
                                                           fake_search_server: FakeSearchServer) -> None:
    fake_search_server.override = Reply(status=401)
    with pytest.raises(ProviderError) as raised:
        await chain(adapters, "homepage", "tavily").gather("nowhere.example")
    assert str(raised.value) == ("homepage: test resolver does not know nowhere.example; "
                                 "tavily: search answered HTTP 401 (check the API key)")


async def test_the_container_builds_the_configured_chain(fake_search_server: FakeSearchServer) -> None:
    settings = Settings(search_provider="homepage,searxng", searxng_url=fake_search_server.base_url, precheck=False)
    container = Container(settings=settings)
    async with container.http_clients():
        search = container.worker_search()
        assert search.name == "homepage,searxng"
        # The homepage reader keeps its address policy: localhost is loopback, refused, and
        # SearXNG is asked instead.
        found = await search.gather("localhost")
    assert evidence_provider(found) == "searxng"
    assert calls(container.metrics(), "homepage", "error") == 1
    assert [r.path for r in fake_search_server.requests] == ["/search"]
