"""Which client serves a model (FIRMSIFT_LLM_CLIENT): the direct OpenAI-compatible client where
litellm would send OpenAI's chat completions as they are, litellm elsewhere. Checked against
litellm itself (routing, request, credentials, prices), and a process on the direct client never
imports litellm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from firmsift.adapters.llm.client_choice import _chat_rows, openai_chat_model, uses_direct_client
from firmsift.adapters.llm.credentials import provider_credentials
from firmsift.adapters.llm.endpoint import unset_credentials
from firmsift.adapters.llm.litellm_llm import LiteLLM
from firmsift.adapters.llm.openai_chat import OpenAIChat
from firmsift.adapters.llm.output_modes import FormatMemory
from firmsift.adapters.llm.price_map import PriceMapPricing
from firmsift.adapters.llm.pricing import LitellmPricing
from firmsift.adapters.llm.transport import provider_of
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.entrypoints.wiring.lazy_adapters import make_eval_pricing, uses_direct_llm_client
from firmsift.entrypoints.settings import Settings
from tests.support.fake_llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[2]
SCHEMA: dict[str, Any] = {"title": "answer", "type": "object", "properties": {"is_cpg": {"type": "boolean"}}}
# The bare names of OpenAI's chat models in litellm's map (a few keys carry a provider prefix).
OPENAI_CHAT_NAMES = sorted(name for name, row in _chat_rows().items() if row == ("openai", "chat") and "/" not in name)


@pytest.mark.parametrize(
    ("model", "temperature", "setting", "direct"),
    [
        ("openai/fake-model", None, "auto", True),  # any OpenAI-compatible server
        ("openai/qwen2.5-7b-instruct", 0.0, "auto", True),
        ("gpt-5.4-mini", None, "auto", True),  # the default model
        ("gpt-4o-mini", 0.2, "auto", True),
        ("gpt-5.4-mini", 0.0, "auto", False),  # litellm's temperature rule for reasoning models
        ("gpt-5.4-mini", 1.0, "auto", True),
        ("o3-mini", None, "auto", False),  # the o-series: litellm may rewrite the system message
        ("gpt-4o-audio-preview", None, "auto", False),
        ("gpt-5-search-api", None, "auto", False),
        ("anthropic/claude-3-5-haiku-latest", None, "auto", False),
        ("gemini/gemini-2.0-flash", None, "auto", False),
        ("ollama/llama3", None, "auto", False),  # Ollama's native API, not its /v1
        ("claude-3-5-haiku-latest", None, "auto", False),  # a bare name of another provider
        ("gpt-9-imaginary", None, "auto", False),  # a bare name litellm does not know: its error
        ("openai/", None, "auto", False),
        ("openai/fake-model", None, "litellm", False),  # the escape hatch
        ("gpt-5.4-mini", None, "litellm", False),
    ],
)
def test_the_client_of_a_model(model: str, temperature: float | None, setting: str, direct: bool) -> None:
    assert uses_direct_client(model, temperature=temperature, setting=setting) is direct


def test_the_setting_picks_the_client() -> None:
    assert uses_direct_llm_client(Settings(llm_model="openai/m", llm_api_base="http://127.0.0.1:9/v1"))
    assert not uses_direct_llm_client(Settings(llm_model="openai/m", llm_client="litellm"))
    assert not uses_direct_llm_client(Settings(llm_model="anthropic/claude-3-5-haiku-latest"))
    with pytest.raises(ValueError):
        Settings(llm_client="httpx")


@pytest.mark.parametrize("name", OPENAI_CHAT_NAMES)
def test_every_bare_name_the_direct_client_takes_is_one_litellm_sends_to_openai(name: str) -> None:
    if openai_chat_model(name) is not None:
        assert provider_of(name, None) == "openai"
        # and priced the same from the map file as litellm prices it (a worker on the direct
        # client never imports litellm to price its answers)
        assert PriceMapPricing().cost(name, 1000, 100) == pytest.approx(LitellmPricing().cost(name, 1000, 100))


@pytest.mark.parametrize("model", ["gpt-5.4-mini", "gpt-4o-mini", "openai/fake-model"])
@pytest.mark.parametrize("key", [None, "sk-env"])
def test_the_credentials_rule_without_litellm_agrees_with_litellm(
    model: str, key: str | None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if key is None:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    found = unset_credentials(model, api_base=None, api_key=None)
    litellms = provider_credentials(model)
    assert (found.variables if found else ()) == litellms.variables


@pytest.mark.anyio
@pytest.mark.parametrize("model", ["openai/fake-model", "gpt-4o-mini", "gpt-4.1-nano", "gpt-5.4-mini",
                                   "openai/gpt-5-mini", "gpt-5-chat-latest"])
@pytest.mark.parametrize("temperature", [None, 1.0])
async def test_the_direct_client_sends_what_litellm_sends(model: str, temperature: float | None) -> None:
    if not uses_direct_client(model, temperature=temperature):
        pytest.skip(f"{model} is litellm's")
    fake = FakeLLMServer()
    with fake as base_url:
        for kind in (LiteLLM, OpenAIChat):
            adapter = kind(model, api_base=base_url, api_key="sk-test", temperature=temperature,
                           max_tokens=300, formats=FormatMemory())
            await adapter.complete("system", "Domain: acme.com", json_schema=SCHEMA)
    through_litellm, direct = fake.requests
    assert direct.path == through_litellm.path
    assert direct.body == through_litellm.body
    assert direct.headers["authorization"] == through_litellm.headers["authorization"] == "Bearer sk-test"
    assert direct.headers["content-type"] == "application/json"


@pytest.mark.anyio
async def test_the_direct_client_reaches_openais_base_from_the_environment_with_its_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeLLMServer()
    with fake as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
        await OpenAIChat("gpt-4o-mini", formats=FormatMemory()).complete("s", "Domain: a.com", json_schema=SCHEMA)
    [sent] = fake.requests
    assert sent.path == "/v1/chat/completions" and sent.headers["authorization"] == "Bearer sk-from-env"


@pytest.mark.anyio
async def test_missing_credentials_make_no_request_on_the_direct_client(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeLLMServer()
    with fake as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)  # where a request would go
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(ProviderError) as caught:
            await OpenAIChat("gpt-4o-mini", formats=FormatMemory()).complete("s", "u", json_schema=SCHEMA)
    assert caught.value.cause is FailureCause.MISSING_CREDENTIALS and not caught.value.retryable
    assert "FIRMSIFT_LLM_API_KEY" in str(caught.value) and "OPENAI_API_KEY" in str(caught.value)
    assert fake.requests == []


# A worker's LLM graph in a fresh interpreter: the LLM, its prices (normal and batch), the
# start-up credentials check, one answer from the fake server; then which modules were imported.
_WORKER_PROBE = """
import asyncio, json, sys
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.llm_credentials import llm_credentials_problem
import firmsift.entrypoints.worker.loop, firmsift.entrypoints.cli.main

async def main():
    settings = Settings()
    container = Container(settings=settings)
    assert llm_credentials_problem(settings) is None
    async with container.http_clients():
        llm = container.llm()
        answer = await llm.complete("system", "Domain: acme.com", json_schema={"type": "object"})
        cost = container.pricing().cost(settings.llm_model, 1000, 100)
        container.batch_pricing()
    print(json.dumps({"adapter": type(llm).__name__, "answer": bool(answer.text),
                      "litellm": sorted(name for name in sys.modules if name.split(".")[0] == "litellm")[:3]}))

asyncio.run(main())
"""


@pytest.mark.parametrize(("client", "model", "adapter", "imports_litellm"), [
    ("auto", "openai/fake-model", "OpenAIChat", False),
    ("auto", "gpt-4o-mini", "OpenAIChat", False),  # OpenAI itself (its base set to the fake)
    ("litellm", "openai/fake-model", "LiteLLM", True),  # control: the probe does see litellm
])
def test_a_worker_on_the_direct_client_never_imports_litellm(
    tmp_path: Path, client: str, model: str, adapter: str, imports_litellm: bool,
) -> None:
    fake = FakeLLMServer()
    with fake as base_url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FIRMSIFT_", "OPENAI_"))}
        env.update(PYTHONPATH=str(ROOT), FIRMSIFT_LLM_CLIENT=client, FIRMSIFT_LLM_MODEL=model,
                   FIRMSIFT_DATABASE_URL=f"sqlite:///{tmp_path / 'probe.db'}")
        if model.startswith("openai/"):
            env["FIRMSIFT_LLM_API_BASE"] = base_url
        else:
            env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-test")
        done = subprocess.run([sys.executable, "-c", _WORKER_PROBE], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["adapter"] == adapter and seen["answer"]
    assert bool(seen["litellm"]) is imports_litellm, seen["litellm"]


def test_eval_prices_from_the_map_file_unless_a_candidate_is_litellms() -> None:
    overrides = {"openai/model-a": (1.0, 4.0)}
    direct = make_eval_pricing(overrides, ["openai/local"])
    assert type(direct) is PriceMapPricing
    assert (direct.overrides, direct.unpriced) == (overrides, frozenset({"openai/local"}))
    mixed = make_eval_pricing(overrides, ["openai/local"], {"anthropic/claude-3-5-haiku-latest"})
    assert type(mixed) is LitellmPricing
    assert (mixed.overrides, mixed.unpriced) == (overrides, frozenset({"openai/local"}))
