"""Compressed and oversized bodies from a loopback server: every search client inflates within its cap."""

from __future__ import annotations

import json
import os
import random
import tracemalloc
from collections.abc import AsyncIterator

import pytest

from firmsift.adapters.search.brave import BraveSearch
from firmsift.adapters.search.homepage import HomepageSearch
from firmsift.adapters.search.api import MAX_RESPONSE_BYTES
from firmsift.adapters.search.searxng import SearxngSearch
from firmsift.adapters.search.tavily import TavilySearch
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence
from tests.support.compression_bombs import bomb, compressed
from tests.support.fake_search_server import FakeSearchServer, Reply

pytestmark = pytest.mark.anyio

INFLATED = 30_000_000  # ~30 KB on the wire: one network read held all of it before the fix
ENCODINGS = ["gzip", "deflate", "raw-deflate"]  # raw-deflate: sent as "deflate", unwrapped
# Memory a fetch may take, far below the bomb's 30 MB (the homepage's cap is 512 KB, the APIs' 2 MB).
PEAK_ALLOWED = 12_000_000


async def to_loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


@pytest.fixture
async def homepage(fake_search_server: FakeSearchServer) -> AsyncIterator[HomepageSearch]:
    adapter = HomepageSearch(allow_private_addresses=True, resolver=to_loopback, port=fake_search_server.port,
                             timeout=5.0, total_timeout=20.0)
    yield adapter
    await adapter.aclose()


@pytest.fixture(params=["searxng", "tavily", "brave"])
async def api(request: pytest.FixtureRequest, fake_search_server: FakeSearchServer) -> AsyncIterator[object]:
    adapter = {
        "searxng": lambda: SearxngSearch(fake_search_server.base_url, timeout=10.0),
        "tavily": lambda: TavilySearch("key", base_url=fake_search_server.base_url, timeout=10.0),
        "brave": lambda: BraveSearch("key", base_url=fake_search_server.base_url, timeout=10.0),
    }[request.param]()
    yield adapter
    await adapter.aclose()


def sent_as(encoding: str) -> str:
    return "deflate" if encoding == "raw-deflate" else encoding


async def failure_within_memory(adapter: HomepageSearch | SearxngSearch, domain: str) -> ProviderError:
    """The ProviderError `adapter` raises for `domain`, checking the fetch stayed small in memory."""
    tracemalloc.start()
    try:
        with pytest.raises(ProviderError) as caught:
            await adapter.gather(domain)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_ALLOWED, f"peak {peak:,} bytes"
    return caught.value


@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_homepage_bomb_is_refused_within_the_cap(
    homepage: HomepageSearch, fake_search_server: FakeSearchServer, encoding: str
) -> None:
    fake_search_server.add_page("example.com", "/", Reply(
        body=bomb(encoding, INFLATED, prefix=b"<title>boom</title>"),
        headers={"Content-Encoding": sent_as(encoding)},
    ))
    error = await failure_within_memory(homepage, "example.com")
    assert str(error).startswith("homepage: http://example.com/ answered a body inflating more than 100:1")
    assert "compression bomb" in str(error)
    # Identity was asked for; the server compressed anyway.
    assert fake_search_server.requests[-1].headers["accept-encoding"] == "identity"


@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_homepage_reads_an_honest_compressed_page(
    homepage: HomepageSearch, fake_search_server: FakeSearchServer, encoding: str
) -> None:
    page = b"<title>Biscuits</title><p>We bake biscuits.</p>"
    fake_search_server.add_page("example.com", "/", Reply(
        body=compressed(encoding, page), headers={"Content-Encoding": sent_as(encoding)},
    ))
    assert await homepage.gather("example.com") == [
        Evidence("http://example.com/", "Biscuits", "We bake biscuits.")
    ]


def words(count: int, seed: int = 7) -> str:
    """Text that compresses about as well as real prose (3-4:1), not like a bomb."""
    rng = random.Random(seed)
    return " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9)))
                    for _ in range(count))


async def test_homepage_cuts_an_honest_compressed_page_at_max_bytes(fake_search_server: FakeSearchServer) -> None:
    page = f"<title>Big</title><p>Start</p><p>{words(30_000)}</p><p>THE END</p>".encode()
    fake_search_server.add_page("example.com", "/", Reply(body=compressed("gzip", page),
                                                          headers={"Content-Encoding": "gzip"}))
    adapter = HomepageSearch(allow_private_addresses=True, resolver=to_loopback, port=fake_search_server.port,
                             max_bytes=50_000)
    try:
        [evidence] = await adapter.gather("example.com")
    finally:
        await adapter.aclose()
    assert evidence.title == "Big" and "Start" in evidence.snippet
    assert "THE END" not in evidence.snippet


@pytest.mark.parametrize(
    ("content_encoding", "body", "reason"),
    [
        ("br", os.urandom(2000), "unsupported content encoding ('br')"),
        ("zstd", b"\x28\xb5\x2f\xfd" + os.urandom(2000), "unsupported content encoding ('zstd')"),
        ("gzip, gzip", b"", "stacked content encodings (gzip, gzip)"),
        ("gzip", b"<title>not gzip at all</title>", "not valid gzip"),
    ],
)
async def test_homepage_refuses_bodies_it_cannot_decode(
    homepage: HomepageSearch, fake_search_server: FakeSearchServer, content_encoding: str, body: bytes, reason: str
) -> None:
    fake_search_server.add_page("example.com", "/", Reply(body=body, headers={"Content-Encoding": content_encoding}))
    error = await failure_within_memory(homepage, "example.com")
    assert reason in str(error)


@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_search_api_bomb_is_refused_within_the_cap(
    api: SearxngSearch, fake_search_server: FakeSearchServer, encoding: str
) -> None:
    fake_search_server.override = Reply(body=bomb(encoding, INFLATED, prefix=b'{"results": ['),
                                        content_type="application/json",
                                        headers={"Content-Encoding": sent_as(encoding)})
    error = await failure_within_memory(api, "acme.com")
    assert f"{api.name}: search answered a body inflating more than 100:1" in str(error)
    assert error.retryable is False


async def test_search_api_body_over_the_cap_is_refused(api: SearxngSearch,
                                                       fake_search_server: FakeSearchServer) -> None:
    body = json.dumps({"results": [], "web": {"results": []}, "padding": "x" * 2_100_000}).encode()
    assert len(body) > MAX_RESPONSE_BYTES
    fake_search_server.override = Reply(body=body, content_type="application/json")
    error = await failure_within_memory(api, "acme.com")
    assert f"{api.name}: search answered a body larger than 2,000,000 bytes" == str(error)


@pytest.mark.parametrize("encoding", ENCODINGS)
async def test_search_api_reads_an_honest_compressed_answer(
    api: SearxngSearch, fake_search_server: FakeSearchServer, encoding: str
) -> None:
    result = {"url": "https://acme.com/", "title": "Acme", "content": "Soap", "description": "Soap"}
    body = json.dumps({"results": [result], "web": {"results": [result]}}).encode()
    fake_search_server.override = Reply(body=compressed(encoding, body), content_type="application/json",
                                        headers={"Content-Encoding": sent_as(encoding)})
    assert await api.gather("acme.com") == [Evidence("https://acme.com/", "Acme", "Soap")]
    # Only what the reader decodes itself is advertised.
    assert fake_search_server.requests[-1].headers["accept-encoding"] == "gzip, deflate"


async def test_search_api_in_an_unsupported_encoding_is_refused(
    api: SearxngSearch, fake_search_server: FakeSearchServer
) -> None:
    fake_search_server.override = Reply(body=os.urandom(1000), content_type="application/json",
                                        headers={"Content-Encoding": "br"})
    error = await failure_within_memory(api, "acme.com")
    assert str(error) == f"{api.name}: search answered a body in an unsupported content encoding ('br')"
