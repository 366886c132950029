"""Both LLM adapters (litellm's and the direct client) read a provider's answer within limits: bombs,
endless and oversized bodies from a loopback server are refused in bounded memory, honest
compressed answers are read; the bounded client is made with the adapter and closed with the
container's other HTTP clients."""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import Callable

import httpx
import litellm
import pytest

from firmsift.adapters.web.bounded_body import BodyLimits, UnreadableBody
from firmsift.adapters.web.bounded_transport import bounded_client
from firmsift.adapters.llm.laddered_llm import LadderedLLM
from firmsift.adapters.llm.litellm_llm import LiteLLM
from firmsift.adapters.llm.openai_chat import OpenAIChat
from firmsift.adapters.llm.transport import (
    LLM_RESPONSE_LIMITS,
    NATIVE_PROVIDERS,
    OPENAI_CLIENT_PROVIDERS,
    provider_of,
    reads_within_limits,
)
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.settings import Settings
from tests.support.compression_bombs import bomb, compressed
from tests.support.fake_search_server import FakeSearchServer, Reply
from tests.support.llm_adapters import adapter_class

LLMAt = Callable[[FakeSearchServer], LadderedLLM]  # an adapter at the server's /v1
__all__ = ["adapter_class"]  # the fixture every `llm_at` is made with

pytestmark = pytest.mark.anyio

PATH = "/v1/chat/completions"
INFLATED = 30_000_000
PEAK_ALLOWED = 12_000_000  # the cap is 4 MB; without it, litellm held ~4 copies of the 30 MB answer
# A chat completion whose answer is a long run of "a": valid JSON, so a client would parse all of it.
HEAD = (b'{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
        b'"finish_reason": "stop", "message": {"role": "assistant", "content": "')
TAIL = b'"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}'
ANSWER = '{"answer": true, "confidence": 5, "reason": "Makes soap."}'


@pytest.fixture
def llm_at(adapter_class: type[LadderedLLM]) -> Callable[[FakeSearchServer], LadderedLLM]:
    """Makes adapters of each kind (litellm's, the direct client) at the server's /v1."""
    return lambda server: adapter_class("openai/m", api_base=f"{server.base_url}/v1", api_key="unused", timeout=30,
                                        response_format="text")


def honest_completion() -> bytes:
    return HEAD + json.dumps(ANSWER)[1:-1].encode() + TAIL


async def refused_within_memory(llm: LadderedLLM, server: FakeSearchServer) -> ProviderError:
    """The error `llm` raises, measured after one honest call elsewhere (the client's lazy imports
    and caches are not the answer's cost)."""
    server.add_page("127.0.0.1", "/warm/v1/chat/completions", Reply(body=honest_completion(),
                                                                    content_type="application/json"))
    warm = type(llm)(llm.model, api_base=f"{server.base_url}/warm/v1", api_key="unused", response_format="text")
    await warm.complete("system", "user", json_schema={"type": "object"})
    asked = len(server.requests)
    tracemalloc.start()
    try:
        with pytest.raises(ProviderError) as caught:
            await llm.complete("system", "user", json_schema={"type": "object"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < PEAK_ALLOWED, f"peak {peak:,} bytes"
    assert len(server.requests) - asked == 1  # neither litellm nor the OpenAI client asked again
    return caught.value


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
async def test_a_compression_bomb_is_refused_once_in_bounded_memory(
    fake_search_server: FakeSearchServer, encoding: str, llm_at: LLMAt,
) -> None:
    sent_as = "deflate" if encoding == "raw-deflate" else encoding
    fake_search_server.add_page("127.0.0.1", PATH, Reply(
        body=bomb(encoding, INFLATED, prefix=HEAD, suffix=TAIL, fill=b"a"), content_type="application/json",
        headers={"Content-Encoding": sent_as}))
    error = await refused_within_memory(llm_at(fake_search_server), fake_search_server)
    assert "the provider answered a body inflating more than 100:1" in str(error)
    assert "it was not read" in str(error)
    assert error.cause is FailureCause.UNREADABLE_RESPONSE
    assert error.retryable is False  # the same bomb would come back


async def test_an_endless_answer_is_cut_at_the_cap(fake_search_server: FakeSearchServer, llm_at: LLMAt) -> None:
    fake_search_server.add_page("127.0.0.1", PATH, Reply(body=HEAD, content_type="application/json", endless=True))
    error = await refused_within_memory(llm_at(fake_search_server), fake_search_server)
    assert f"the provider answered a body larger than {LLM_RESPONSE_LIMITS.max_bytes:,} bytes" in str(error)
    assert error.retryable is False


async def test_an_answer_over_the_cap_is_refused(fake_search_server: FakeSearchServer, llm_at: LLMAt) -> None:
    body = HEAD + b"a" * (LLM_RESPONSE_LIMITS.max_bytes + 1) + TAIL
    fake_search_server.add_page("127.0.0.1", PATH, Reply(body=body, content_type="application/json"))
    error = await refused_within_memory(llm_at(fake_search_server), fake_search_server)
    assert "a body larger than 4,000,000 bytes" in str(error)


async def test_an_unsupported_encoding_is_refused(fake_search_server: FakeSearchServer, llm_at: LLMAt) -> None:
    fake_search_server.add_page("127.0.0.1", PATH, Reply(body=os.urandom(1000), content_type="application/json",
                                                         headers={"Content-Encoding": "br"}))
    error = await refused_within_memory(llm_at(fake_search_server), fake_search_server)
    assert "the provider answered a body in an unsupported content encoding ('br')" in str(error)


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate", "identity"])
async def test_an_honest_answer_is_read_whatever_its_encoding(
    fake_search_server: FakeSearchServer, encoding: str, llm_at: LLMAt,
) -> None:
    body = honest_completion() if encoding == "identity" else compressed(encoding, honest_completion())
    headers = {} if encoding == "identity" else {"Content-Encoding": "deflate" if encoding == "raw-deflate" else encoding}
    fake_search_server.add_page("127.0.0.1", PATH, Reply(body=body, content_type="application/json", headers=headers))
    completion = await llm_at(fake_search_server).complete("system", "user", json_schema={"type": "object"})
    assert completion.text == ANSWER
    assert fake_search_server.requests[-1].headers["accept-encoding"] == "gzip, deflate"  # only what is decoded


async def test_a_redirect_body_is_read_within_limits_too(fake_search_server: FakeSearchServer, llm_at: LLMAt) -> None:
    fake_search_server.add_page("127.0.0.1", PATH, Reply(status=307, headers={"Location": "/v2/chat/completions",
                                                                              "Content-Encoding": "gzip"},
                                                         body=bomb("gzip", INFLATED), content_type="text/html"))
    fake_search_server.add_page("127.0.0.1", "/v2/chat/completions", Reply(body=honest_completion(),
                                                                           content_type="application/json"))
    error = await refused_within_memory(llm_at(fake_search_server), fake_search_server)
    assert "a body inflating more than 100:1" in str(error)


async def test_the_bounded_client_reads_through_an_environment_proxy(
    fake_search_server: FakeSearchServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", fake_search_server.base_url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    fake_search_server.add_page("llm.invalid", "/v1/models", Reply(
        body=bomb("gzip", INFLATED), content_type="application/json", headers={"Content-Encoding": "gzip"}))
    async with bounded_client(BodyLimits(max_bytes=1_000_000), httpx.AsyncHTTPTransport,
                              proxy_for=lambda url: httpx.AsyncHTTPTransport(proxy=url)) as client:
        with pytest.raises(UnreadableBody, match="inflating more than 100:1"):
            await client.get("http://llm.invalid/v1/models")
    assert fake_search_server.requests[-1].headers["host"] == "llm.invalid"  # it went through the proxy


# Every path the listed providers post a chat to, under the API base given below.
PROVIDER_PATHS = ["/v1/chat/completions", "/v1/completions", "/v1/messages", "/api/chat", "/api/generate",
                  "/models/m:generateContent", "/openai/deployments/m/chat/completions"]


@pytest.mark.parametrize("provider", sorted(OPENAI_CLIENT_PROVIDERS | NATIVE_PROVIDERS))
async def test_every_listed_provider_reads_within_limits(
    fake_search_server: FakeSearchServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A litellm upgrade that moves a provider to the other client fails here, loudly."""
    monkeypatch.setenv("AZURE_API_VERSION", "2024-10-21")
    for path in PROVIDER_PATHS:
        fake_search_server.add_page("127.0.0.1", path, Reply(
            body=bomb("gzip", INFLATED, prefix=HEAD, suffix=TAIL, fill=b"a"), content_type="application/json",
            headers={"Content-Encoding": "gzip"}))
    base = (fake_search_server.base_url if provider in ("anthropic", "azure", "gemini", "ollama", "ollama_chat")
            else f"{fake_search_server.base_url}/v1")
    llm = LiteLLM(f"{provider}/m", api_base=base, api_key="unused", timeout=30, response_format="text")
    assert reads_within_limits(provider_of(llm.model, llm.api_base))
    with pytest.raises(ProviderError) as caught:
        await llm.complete("system", "user", json_schema={"type": "object"})
    assert "the provider answered a body inflating more than 100:1" in str(caught.value)
    assert caught.value.cause is FailureCause.UNREADABLE_RESPONSE and caught.value.retryable is False


def test_a_provider_on_neither_list_is_said_to_be_read_unbounded() -> None:
    assert not reads_within_limits(provider_of("cohere/command-r", None))
    assert not reads_within_limits(provider_of("no-such-model", None))


def test_a_model_read_unbounded_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    LiteLLM("cohere/command-r", api_base="http://127.0.0.1:9/v1")
    assert "without a size limit" in caplog.text
    caplog.clear()
    LiteLLM("openai/m", api_base="http://127.0.0.1:9/v1")
    assert caplog.text == ""


async def test_the_container_makes_the_bounded_client_with_the_adapter_and_closes_it_with_the_others(
    fake_search_server: FakeSearchServer,
) -> None:
    fake_search_server.add_page("127.0.0.1", "/honest/v1/chat/completions", Reply(body=honest_completion(),
                                                                                  content_type="application/json"))
    fake_search_server.add_page("127.0.0.1", PATH, Reply(
        body=bomb("gzip", INFLATED, prefix=HEAD, suffix=TAIL, fill=b"a"), content_type="application/json",
        headers={"Content-Encoding": "gzip"}))
    common = {"llm_model": "openai/m", "llm_api_key": "unused", "llm_response_format": "text", "llm_client": "litellm"}
    honest = Container(settings=Settings(llm_api_base=f"{fake_search_server.base_url}/honest/v1", **common))
    bombed = Container(settings=Settings(llm_api_base=f"{fake_search_server.base_url}/v1", **common))
    async with honest.http_clients():
        assert (await honest.llm().complete("system", "user", json_schema={"type": "object"})).text == ANSWER
        session = litellm.aclient_session
        assert isinstance(session, httpx.AsyncClient) and not session.is_closed
        async with bombed.http_clients():
            with pytest.raises(ProviderError, match="inflating more than 100:1"):
                await bombed.llm().complete("system", "user", json_schema={"type": "object"})
            assert litellm.aclient_session is not session  # each adapter reads through its own client
        # The neighbour closed its client: this adapter's calls still read through its own.
        assert (await honest.llm().complete("system", "user", json_schema={"type": "object"})).text == ANSWER
        assert litellm.aclient_session is session and not session.is_closed
    assert session.is_closed and litellm.aclient_session is None


async def test_the_container_makes_the_direct_client_with_the_adapter_and_closes_it_with_the_others(
    fake_search_server: FakeSearchServer,
) -> None:
    fake_search_server.add_page("127.0.0.1", "/honest/v1/chat/completions", Reply(body=honest_completion(),
                                                                                  content_type="application/json"))
    common = {"llm_model": "openai/m", "llm_api_key": "unused", "llm_response_format": "text"}
    container = Container(settings=Settings(llm_api_base=f"{fake_search_server.base_url}/honest/v1", **common))
    async with container.http_clients():
        llm = container.llm()
        assert isinstance(llm, OpenAIChat)
        assert (await llm.complete("system", "user", json_schema={"type": "object"})).text == ANSWER
        client = llm._http
        assert not client.is_closed
    assert client.is_closed
