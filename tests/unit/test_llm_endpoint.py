"""Where the LLM lives: local servers, hosts as logs show them, and credentials a provider needs."""

from __future__ import annotations

import pytest

from firmsift.adapters.llm.endpoint import api_base_host, is_local_api_base, missing_credentials


@pytest.mark.parametrize(
    ("api_base", "local"),
    [
        ("http://127.0.0.1:8080/v1", True), ("http://localhost:11434/v1", True), ("http://[::1]:8000", True),
        ("http://10.0.0.5:8000/v1", True), ("http://192.168.1.20/v1", True), ("http://ollama:11434/v1", True),
        ("http://gpu-box.local:1234/v1", True), ("http://llm.internal/v1", True), ("127.0.0.1:8080", True),
        ("https://api.openai.com/v1", False), ("https://8.8.8.8/v1", False), ("https://llm.example.com", False),
        (None, False), ("", False),
    ],
)
def test_a_local_api_base_is_recognised_by_its_host(api_base: str | None, local: bool) -> None:
    assert is_local_api_base(api_base) is local


def test_the_host_shown_never_carries_a_path_or_userinfo() -> None:
    assert api_base_host("https://user:sk-secret@proxy.example.com:8443/v1?key=sk-x") == "proxy.example.com:8443"
    assert api_base_host("http://[::1]:8000/v1") == "[::1]:8000"
    assert api_base_host(None) is None


def test_missing_credentials_name_firmsifts_and_the_providers_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    openai = missing_credentials("gpt-5.4-mini", api_base=None, api_key=None)
    assert openai is not None and "FIRMSIFT_LLM_API_KEY" in openai and "OPENAI_API_KEY" in openai
    anthropic = missing_credentials("anthropic/claude-3-5-haiku-latest", api_base=None, api_key=None)
    assert anthropic is not None and "ANTHROPIC_API_KEY" in anthropic


@pytest.mark.parametrize(
    ("model", "api_base", "api_key", "env"),
    [
        ("gpt-5.4-mini", None, "sk-given", {}),  # FIRMSIFT_LLM_API_KEY
        ("gpt-5.4-mini", None, None, {"OPENAI_API_KEY": "sk-env"}),  # the provider's own variable
        ("openai/smollm2", "http://127.0.0.1:8080/v1", None, {}),  # a local server needs none
        # A gateway of the user's own answers for itself, as the worker's start-up check assumes.
        ("anthropic/claude-3-5-haiku-latest", "https://llm-gateway.example.com", None, {}),
        # litellm lists every Azure variable when one is unset: a set key is enough here.
        ("azure/gpt-4o", None, None, {"AZURE_API_KEY": "k", "AZURE_API_BASE": "https://r.openai.azure.com"}),
        ("bedrock/anthropic.claude-3", None, None, {}),  # AWS finds credentials on its own (roles)
    ],
)
def test_credentials_are_present(monkeypatch: pytest.MonkeyPatch, model: str, api_base: str | None,
                                 api_key: str | None, env: dict[str, str]) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_API_KEY", "AZURE_API_BASE", "AZURE_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert missing_credentials(model, api_base=api_base, api_key=api_key) is None
