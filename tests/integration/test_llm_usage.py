"""Tokens and cost through the real LLM adapters (litellm's and the direct client), against the
scripted OpenAI-compatible server over loopback: the usage real servers report, answers billed but
unusable, retries, and prices."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from firmsift.adapters.decorators.prometheus_metrics import MeteredLLM, Metrics
from firmsift.adapters.decorators.retrier import RetryPolicy
from firmsift.adapters.decorators.retrying import RetryingLLM
from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.llm.laddered_llm import LadderedLLM
from firmsift.adapters.llm.output_modes import FormatMemory
from firmsift.adapters.llm.pricing import LitellmPricing
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.domain.model import ResultStatus
from firmsift.entrypoints.wiring.lazy_adapters import make_worker_pricing
from firmsift.entrypoints.settings import Settings
from firmsift.services.asking import ask_llm
from tests.support.fake_llm_server import PROVIDER_FIXTURES, FakeLLMServer
from tests.support.llm_adapters import adapter_class, maker

AdapterAt = Callable[[FakeLLMServer], LadderedLLM]  # an adapter at the fake server
__all__ = ["adapter_class"]  # the fixture every `adapter` is made with

pytestmark = pytest.mark.anyio
ANSWER = '{"is_cpg": true, "confidence": 2, "reasoning": "sells snacks"}'


@pytest.fixture
def adapter(adapter_class: type[LadderedLLM]) -> AdapterAt:
    """Makes adapters of each kind (litellm's, the direct client) at the fake server."""
    make = maker(adapter_class, "openai/fake-model", "sk-test", timeout=10.0)
    return lambda server: make(server.base_url)


async def ask(llm: Any) -> Any:
    return await llm.complete("You classify companies.", "Domain: acme.com\n", json_schema={"type": "object"})


def recorded(name: str) -> dict[str, Any]:
    return json.loads((PROVIDER_FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


async def test_the_usage_a_real_llama_cpp_python_server_reports_is_read(
    fake_llm_server: FakeLLMServer, adapter: AdapterAt,
) -> None:
    exchange = recorded("llama-cpp-python/chat-json-object-with-schema")
    assert exchange["body"]["usage"] == {"prompt_tokens": 71, "completion_tokens": 34, "total_tokens": 105}
    fake_llm_server.enqueue(body=json.dumps(exchange["body"]))
    completion = await ask(adapter(fake_llm_server))
    assert (completion.prompt_tokens, completion.completion_tokens) == (71, 34)


async def test_a_response_without_usage_reports_no_tokens_not_zero(fake_llm_server: FakeLLMServer,
                                                                    adapter: AdapterAt) -> None:
    # litellm stands in a usage of zeros for one the provider did not send: read as "not reported".
    body = {key: value for key, value in recorded("llama-cpp-python/chat-plain")["body"].items() if key != "usage"}
    fake_llm_server.enqueue(body=json.dumps(body))
    completion = await ask(adapter(fake_llm_server))
    assert (completion.prompt_tokens, completion.completion_tokens) == (None, None)


@pytest.mark.parametrize(("reply", "cause"), [
    ({"content": '{"is_cpg": tr', "finish_reason": "length"}, FailureCause.CUT_OFF),
    ({"content": "", "finish_reason": "content_filter"}, FailureCause.CONTENT_FILTER),
    ({"content": None, "refusal": "I cannot help with that."}, FailureCause.MODEL_REFUSED),
    ({"content": "  "}, FailureCause.UNREADABLE_RESPONSE),
])
async def test_an_answer_billed_but_unusable_fails_with_the_tokens_it_was_billed(
        fake_llm_server: FakeLLMServer, reply: dict[str, Any], cause: FailureCause,
    adapter: AdapterAt,
) -> None:
    fake_llm_server.enqueue(**reply)  # the fake reports 10 prompt and 10 completion tokens
    with pytest.raises(ProviderError) as caught:
        await ask(adapter(fake_llm_server))
    assert caught.value.cause is cause
    assert (caught.value.prompt_tokens, caught.value.completion_tokens) == (10, 10)


async def test_an_error_status_reports_no_tokens(fake_llm_server: FakeLLMServer, adapter: AdapterAt) -> None:
    fake_llm_server.enqueue("busy", status=503)
    with pytest.raises(ProviderError) as caught:
        await ask(adapter(fake_llm_server))
    assert (caught.value.prompt_tokens, caught.value.completion_tokens) == (None, None)


async def test_a_worker_answer_adds_every_billed_attempt_prices_it_and_counts_it(
    fake_llm_server: FakeLLMServer, adapter_class: type[LadderedLLM],
) -> None:
    """The worker's stack (metrics outside retries, around the adapter) and ask_llm: a 503 (not
    billed), an answer cut off (billed, retried here as a transient), then the answer."""
    fake_llm_server.enqueue("busy", status=503)
    fake_llm_server.enqueue('{"is_cpg": tr', finish_reason="length")
    fake_llm_server.enqueue(ANSWER)
    pricing = LitellmPricing({"openai/fake-model": (1.5, 2.5)})
    metrics = Metrics(CollectorRegistry())

    class RetryCutOff(adapter_class):  # type: ignore[misc,valid-type]
        """Here a cut-off answer is worth another try (the real adapter never retries one)."""

        async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Any:
            try:
                return await super().complete(system, user, json_schema=json_schema)
            except ProviderError as error:
                if error.cause is FailureCause.CUT_OFF:
                    error.retryable = True
                raise

    inner = RetryCutOff("openai/fake-model", api_base=fake_llm_server.base_url, api_key="sk-test", timeout=10.0,
                        formats=FormatMemory())
    llm = MeteredLLM(RetryingLLM(inner, RetryPolicy(base_delay=0, deadline=None)), metrics, pricing)
    answer, _ = await ask_llm("acme.com", load_catalog()["cpg"], [], llm, pricing=pricing,
                                       slots=asyncio.Semaphore(1), marker="M", now=lambda: datetime.now(UTC))
    await inner.aclose()
    assert len(fake_llm_server.requests) == 3 and answer.status is ResultStatus.DONE
    assert (answer.tokens_in, answer.tokens_out) == (20, 20)
    assert answer.cost_usd == pytest.approx((20 * 1.5 + 20 * 2.5) / 1_000_000)
    registry = metrics.registry
    assert registry.get_sample_value("firmsift_llm_tokens_total", {"model": "openai/fake-model", "direction": "in"}) == 20
    assert registry.get_sample_value("firmsift_llm_cost_usd_total", {"model": "openai/fake-model"}) == \
        pytest.approx(answer.cost_usd)


def test_prices_come_from_the_settings_else_litellms_map_and_a_local_server_has_none() -> None:
    local = {"llm_model": "openai/gpt-4o-mini", "llm_api_base": "http://127.0.0.1:8080/v1"}
    assert make_worker_pricing(Settings(**local)).cost("openai/gpt-4o-mini", 1000, 100) is None
    priced = Settings(**local, llm_input_cost_per_million=0, llm_output_cost_per_million=0)
    assert make_worker_pricing(priced).cost("openai/gpt-4o-mini", 1000, 100) == 0  # free, because it was said so
    hosted = make_worker_pricing(Settings(llm_model="gpt-4o-mini")).cost("gpt-4o-mini", 1_000_000, 0)
    assert hosted is not None and hosted > 0
    configured = Settings(llm_model="gpt-4o-mini", llm_input_cost_per_million=3, llm_output_cost_per_million=9)
    assert make_worker_pricing(configured).cost("gpt-4o-mini", 1_000_000, 1_000_000) == 12
    assert make_worker_pricing(configured).cost("gpt-4o-mini", None, 10) is None


@pytest.mark.parametrize("given", [{"llm_input_cost_per_million": 1.0}, {"llm_output_cost_per_million": 1.0}])
def test_a_price_needs_both_directions(given: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="set both FIRMSIFT_LLM_INPUT_COST_PER_MILLION and"):
        Settings(**given)


@pytest.mark.parametrize("value", [-1.0, float("inf"), float("nan")])
def test_a_price_is_a_finite_amount_not_below_zero(value: float) -> None:
    with pytest.raises(ValueError):
        Settings(llm_input_cost_per_million=value, llm_output_cost_per_million=1.0)
