"""The search-API adapters, retried, against a real loopback server that fails on purpose."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from email.utils import formatdate

import pytest

from firmsift.adapters.search.brave import BraveSearch
from firmsift.adapters.decorators.retrier import RetryPolicy
from firmsift.adapters.decorators.retrying import RetryingSearch
from firmsift.adapters.search.searxng import SearxngSearch
from firmsift.adapters.search.tavily import TavilySearch
from firmsift.domain.errors import ProviderError
from tests.support.fake_search_server import FakeSearchServer, Reply
from tests.support.processes import refusing_port

pytestmark = pytest.mark.anyio

API_KEY = "tvly-SECRET-k3y-0f-the-test"
ApiSearch = SearxngSearch | TavilySearch | BraveSearch
QUICK = RetryPolicy(attempts=3, base_delay=0.01, jitter="none", deadline=30)


def make_api(kind: str, base_url: str, timeout: float = 2.0) -> ApiSearch:
    if kind == "searxng":
        return SearxngSearch(base_url, timeout=timeout)
    if kind == "tavily":
        return TavilySearch(API_KEY, base_url=base_url, timeout=timeout)
    return BraveSearch(API_KEY, base_url=base_url, timeout=timeout)


@pytest.fixture(params=["searxng", "tavily", "brave"])
async def api(request: pytest.FixtureRequest, fake_search_server: FakeSearchServer) -> AsyncIterator[ApiSearch]:
    adapter = make_api(request.param, fake_search_server.base_url)
    yield adapter
    await adapter.aclose()


async def failure(search: ApiSearch | RetryingSearch) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await search.gather("acme.com")
    assert API_KEY not in str(caught.value)
    return caught.value


@pytest.mark.parametrize(
    ("status", "headers", "retryable", "retry_after"),
    [
        (429, {"Retry-After": "5"}, True, 5.0),
        (503, {"Retry-After": "2.5"}, True, 2.5),
        (500, {}, True, None),
        (408, {}, True, None),
        (400, {"Retry-After": "5"}, False, None),
        (401, {}, False, None),
        (404, {}, False, None),
    ],
)
async def test_http_failures_say_whether_to_retry_and_when(
    api: ApiSearch, fake_search_server: FakeSearchServer, status: int, headers: dict[str, str], retryable: bool,
    retry_after: float | None,
) -> None:
    fake_search_server.override = Reply(status=status, headers=headers, body=f'{{"detail": "{API_KEY}"}}'.encode())
    error = await failure(api)
    assert f"HTTP {status}" in str(error)
    assert (error.retryable, error.retry_after) == (retryable, retry_after)


async def test_a_retry_after_date_becomes_seconds(api: ApiSearch, fake_search_server: FakeSearchServer) -> None:
    fake_search_server.override = Reply(status=503, headers={"Retry-After": formatdate(time.time() + 30, usegmt=True)})
    retry_after = (await failure(api)).retry_after
    assert retry_after is not None and 28 <= retry_after <= 30


@pytest.mark.parametrize(
    "reply",
    [Reply(body=b"<html>maintenance</html>"), Reply(body=b"[1, 2]", content_type="application/json")],
    ids=["not-json", "wrong-shape"],
)
async def test_unreadable_answers_are_not_retryable(api: ApiSearch, fake_search_server: FakeSearchServer,
                                                    reply: Reply) -> None:
    fake_search_server.override = reply
    assert (await failure(api)).retryable is False


async def test_timeouts_and_refused_connections_are_retryable(fake_search_server: FakeSearchServer) -> None:
    fake_search_server.delay = 2.0
    slow = make_api("tavily", fake_search_server.base_url, timeout=0.2)
    with refusing_port() as closed_port:
        refused = make_api("brave", f"http://127.0.0.1:{closed_port}")
        try:
            assert (await failure(slow)).retryable is True
            assert (await failure(refused)).retryable is True
        finally:
            await slow.aclose()
            await refused.aclose()


async def test_a_429_is_waited_out_then_answered(api: ApiSearch, fake_search_server: FakeSearchServer) -> None:
    fake_search_server.override = Reply(status=429, headers={"Retry-After": "1"})
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        fake_search_server.override = None  # the provider's window has passed

    evidence = await RetryingSearch(api, QUICK, sleep=sleep).gather("acme.com")
    assert [item.url for item in evidence] == ["https://acme.com/about"]
    assert waits == [1.0]
    assert len(fake_search_server.requests) == 2


async def test_persistent_failures_give_up_after_the_attempts(api: ApiSearch,
                                                              fake_search_server: FakeSearchServer) -> None:
    fake_search_server.override = Reply(status=502)
    error = await failure(RetryingSearch(api, QUICK))
    assert str(error).endswith("search answered HTTP 502 (gave up after 3 attempts)")
    assert len(fake_search_server.requests) == 3


async def test_client_errors_are_not_retried(api: ApiSearch, fake_search_server: FakeSearchServer) -> None:
    fake_search_server.override = Reply(status=401)
    error = await failure(RetryingSearch(api, QUICK))
    assert "attempt" not in str(error)
    assert len(fake_search_server.requests) == 1


@pytest.mark.parametrize("reply", [Reply(status=503, body=b'{"error": {"code": "', endless=True),
                                   Reply(status=503, body=b'{"error": {"code": "', cut_short=True)],
                         ids=["endless", "cut-short"])
async def test_an_unreadable_error_body_still_gives_the_status(
    api: ApiSearch, fake_search_server: FakeSearchServer, reply: Reply
) -> None:
    fake_search_server.override = reply
    error = await failure(api)
    assert "HTTP 503" in str(error) and error.retryable is True
