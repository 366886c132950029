"""Model prices read from litellm's bundled price map file, without importing litellm.

The API process prices a dry run (`POST /batches?dry_run=true`, the web app's estimate) with it:
importing litellm there would cost ~200 MB of the API's 100 MB budget, for one look-up in a JSON
file litellm ships. The look-up is litellm's for the plain case: the model name as given, then
without its provider prefix ("openai/gpt-4o" reads "gpt-4o"); a model the map prices some other
way (tiers, per-second billing) has no price here, and the estimate says its cost is unknown.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
import importlib.util
import json
from collections.abc import Collection, Mapping
from pathlib import Path

PRICE_MAP_FILE = "model_prices_and_context_window_backup.json"


def price_map_path() -> Path | None:
    """litellm's bundled price map, found without importing litellm (None: litellm not installed)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).with_name(PRICE_MAP_FILE)
    return path if path.is_file() else None


@functools.lru_cache(maxsize=16)
def per_token_prices(model: str, path: Path | None = None, kind: str = "") -> tuple[float, float] | None:
    """(input, output) USD per token of `model` in the price map, or None when it has none;
    `kind` "_batches" reads its prices through the provider's batch API instead."""
    path = path or price_map_path()
    if path is None:
        return None
    with path.open(encoding="utf-8") as file:
        entries = json.load(file)
    for name in (model, model.split("/", 1)[1] if "/" in model else None):
        entry = entries.get(name) if name else None
        if isinstance(entry, dict):
            prices = entry.get(f"input_cost_per_token{kind}"), entry.get(f"output_cost_per_token{kind}")
            if all(isinstance(price, (int, float)) and not isinstance(price, bool) for price in prices):
                return float(prices[0]), float(prices[1])  # type: ignore[arg-type]
    return None


class ConfiguredPricing(ABC):
    """Pricing (ports.providers) with the configured prices first: `overrides` maps a model name to
    (input, output) USD per million tokens, for models a map lacks or prices negotiated apart;
    models in `unpriced` have no price unless overridden (a model served by a local server costs
    what the machine costs, not what a map says the hosted model of that name does). Any other
    model is priced by `mapped`, which subclasses give."""

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
        return self.mapped(model, prompt_tokens, completion_tokens)

    @abstractmethod
    def mapped(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        """The price of a model with no configured price, or None when the map has none."""


class PriceMapPricing(ConfiguredPricing):
    """The configured prices, else the price map file's (read without importing litellm)."""

    def __init__(self, overrides: Mapping[str, tuple[float, float]] | None = None,
                 unpriced: Collection[str] = (), path: Path | None = None) -> None:
        super().__init__(overrides, unpriced)
        self.path = path

    def mapped(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        prices = per_token_prices(model, self.path)
        if prices is None:
            return None
        return prompt_tokens * prices[0] + completion_tokens * prices[1]

class BatchPricing:
    """US dollars per call through the provider's batch API (economy mode): the map's batch prices
    where it has them for the model (`input_cost_per_token_batches`, `output_cost_per_token_batches`:
    half the normal price for OpenAI's models), else the normal price (configured or mapped) times
    `factor` (FIRMSIFT_ECONOMY_PRICE_FACTOR). A configured price is always scaled by `factor`."""

    def __init__(self, normal: ConfiguredPricing, factor: float, path: Path | None = None) -> None:
        self.normal = normal
        self.factor = factor
        self.path = path

    def cost(self, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        if prompt_tokens is None or completion_tokens is None or model in self.normal.unpriced:
            return None
        rates = None if model in self.normal.overrides else per_token_prices(model, self.path, "_batches")
        if rates is not None:
            return prompt_tokens * rates[0] + completion_tokens * rates[1]
        normal = self.normal.cost(model, prompt_tokens, completion_tokens)
        return None if normal is None else normal * self.factor
