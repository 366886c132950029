"""Provider ports: web search for evidence, the LLM that answers and the prices of its tokens."""

from __future__ import annotations

from typing import Any, Protocol

from firmsift.domain.model import Completion, Evidence

__all__ = ["LLM", "Completion", "Pricing", "Search"]


class Search(Protocol):
    name: str

    async def gather(self, domain: str) -> list[Evidence]:
        """Evidence about what the company at `domain` sells. Raises ProviderError."""


class LLM(Protocol):
    model: str

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        """One chat completion asking for JSON matching json_schema (where the provider
        supports it). Raises ProviderError on refusal, timeout, cut-off or transport error."""


class Pricing(Protocol):
    def cost(self, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """US dollars for one call of `model` (the model string the LLM was configured with),
        or None when it is unknown: a token count not reported, or no price for the model."""
