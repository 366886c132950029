"""Model prices: litellm's local cost map (shipped with the package, never fetched), overridable per model."""

from __future__ import annotations

from firmsift.adapters.llm.offline import litellm
from firmsift.adapters.llm.price_map import ConfiguredPricing


class LitellmPricing(ConfiguredPricing):
    """The configured prices, else litellm's local cost map (as litellm.cost_per_token reads it)."""

    def mapped(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        try:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        except Exception:  # noqa: BLE001 - litellm raises a bare Exception for an unmapped model
            return None
        return float(prompt_cost) + float(completion_cost)
