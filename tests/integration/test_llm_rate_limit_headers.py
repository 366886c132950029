"""Both LLM adapters (litellm's and the direct client) pass on what the provider's x-ratelimit-*
headers say, with an answer and with a 429, however their client hands them over (checked against
the scripted server, over loopback)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from firmsift.adapters.llm.laddered_llm import LadderedLLM
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.domain.rate_limit_headers import RateLimitHeaders
from tests.support.fake_llm_server import FakeLLMServer
from tests.support.llm_adapters import adapter_class, maker

AdapterAt = Callable[[FakeLLMServer], LadderedLLM]  # an adapter at the fake server
__all__ = ["adapter_class"]  # the fixture every `adapter` is made with

pytestmark = pytest.mark.anyio
SCHEMA = {"type": "object", "properties": {"is_cpg": {"type": "boolean"}}, "required": ["is_cpg"]}
OPENAI_HEADERS = {
    "x-ratelimit-limit-requests": "500", "x-ratelimit-limit-tokens": "30000",
    "x-ratelimit-remaining-requests": "499", "x-ratelimit-remaining-tokens": "29000",
    "x-ratelimit-reset-requests": "120ms", "x-ratelimit-reset-tokens": "2s",
}


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    with server:
        yield server


@pytest.fixture
def adapter(adapter_class: type[LadderedLLM]) -> AdapterAt:
    """Makes adapters of each kind (litellm's, the direct client) at the fake server."""
    make = maker(adapter_class, "openai/fake-model", "sk-test", timeout=10.0)
    return lambda fake: make(fake.base_url)


async def test_an_answer_carries_the_limits_its_headers_announced(fake: FakeLLMServer, adapter: AdapterAt) -> None:
    fake.enqueue('{"is_cpg": true}', headers=OPENAI_HEADERS)
    completion = await adapter(fake).complete("system", "Domain: acme.com", json_schema=SCHEMA)
    assert completion.rate_limits == RateLimitHeaders(500, 30000, 499, 29000, 0.12, 2.0)


async def test_an_answer_without_such_headers_carries_none(fake: FakeLLMServer, adapter: AdapterAt) -> None:
    fake.enqueue('{"is_cpg": true}')
    completion = await adapter(fake).complete("system", "Domain: acme.com", json_schema=SCHEMA)
    assert completion.rate_limits is None


async def test_a_429_carries_its_limits_and_its_retry_after(fake: FakeLLMServer, adapter: AdapterAt) -> None:
    fake.enqueue("slow down", status=429, headers={**OPENAI_HEADERS, "x-ratelimit-remaining-requests": "0",
                                                   "retry-after": "3"})
    with pytest.raises(ProviderError) as raised:
        await adapter(fake).complete("system", "Domain: acme.com", json_schema=SCHEMA)
    error = raised.value
    assert error.cause is FailureCause.RATE_LIMITED and error.retry_after == 3.0
    assert error.rate_limits is not None and error.rate_limits.remaining_requests == 0
    assert error.rate_limits.limit_requests == 500
