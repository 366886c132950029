"""The two LLM adapters the LLM behaviour suites run against: litellm's, and the direct
OpenAI-compatible client that serves OpenAI's chat completions without litellm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from firmsift.adapters.llm.laddered_llm import LadderedLLM
from firmsift.adapters.llm.litellm_llm import LiteLLM
from firmsift.adapters.llm.openai_chat import OpenAIChat
from firmsift.adapters.llm.output_modes import FormatMemory

ADAPTERS: dict[str, type[LadderedLLM]] = {"litellm": LiteLLM, "direct": OpenAIChat}
MakeLLM = Callable[..., Any]


@pytest.fixture(params=sorted(ADAPTERS))
def adapter_class(request: pytest.FixtureRequest) -> type[LadderedLLM]:
    """Each LLM adapter class in turn."""
    return ADAPTERS[request.param]


def maker(kind: type[LadderedLLM], model: str, api_key: str, **defaults: Any) -> MakeLLM:
    """A function making `kind` adapters for `model` at an API base, each with its own format
    memory (a port reused by the OS must not inherit one) unless given."""

    def make(base_url: str, **options: Any) -> Any:
        options = {**defaults, **options}
        options.setdefault("formats", FormatMemory())
        return kind(model, api_base=base_url, api_key=api_key, **options)

    return make
