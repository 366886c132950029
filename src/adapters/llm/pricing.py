"""Model prices: litellm's local cost map (shipped with the package, never fetched), overridable per model."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from firmsift.adapters.llm.offline import litellm


class LitellmPricing:
    """US dollars per call from token counts. `overrides` maps a model name to (input, output)
    prices in USD per million tokens, for models the map lacks or prices negotiated apart.
    Models in `unpriced` have no price unless overridden: a model served by a local server
    costs what the machine costs, not what litellm's map says the hosted model of that name does."""

    def __init__(self, overrides: Mapping[str, tuple[float, float]] | None = None,
                 unpriced: Collection[str] = ()) -> None:
        self.overrides = dict(overrides or {})
        self.unpriced = frozenset(unpriced) - set(self.overrides)

    def cost(self, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        if prompt_tokens is None or completion_tokens is None or model in self.unpriced:
            return None
        if model in self.overrides:
            per_input, per_output = self.overrides[model]
            return (prompt_tokens * per_input + completion_tokens * per_output) / 1_000_000
        try:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        except Exception:  # noqa: BLE001 - litellm raises a bare Exception for an unmapped model
            return None
        return float(prompt_cost) + float(completion_cost)
