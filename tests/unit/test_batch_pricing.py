"""The batch price (economy mode): litellm's batch prices where its map has them, else the normal
price times the factor; a configured price always times the factor; no price stays no price."""

import pytest

from firmsift.adapters.llm.price_map import BatchPricing
from firmsift.adapters.llm.pricing import LitellmPricing


def test_a_model_litellm_has_batch_prices_for_costs_those() -> None:
    normal = LitellmPricing()
    batch = BatchPricing(normal, factor=0.9)  # the factor is not used where litellm has batch prices
    for model in ("gpt-4o-mini", "openai/gpt-4o-mini"):
        assert batch.cost(model, 1_000_000, 1_000_000) == pytest.approx(0.075 + 0.30)
        assert normal.cost(model, 1_000_000, 1_000_000) == pytest.approx(0.15 + 0.60)


def test_a_configured_price_is_scaled_by_the_factor() -> None:
    batch = BatchPricing(LitellmPricing({"gpt-4o-mini": (1.0, 2.0)}), factor=0.5)
    assert batch.cost("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(1.5)


def test_unknown_tokens_or_prices_stay_unknown() -> None:
    batch = BatchPricing(LitellmPricing(unpriced=["openai/local-model"]), factor=0.5)
    assert batch.cost("openai/local-model", 10, 10) is None
    assert batch.cost("no-such-model-anywhere", 10, 10) is None
    assert batch.cost("gpt-4o-mini", None, 10) is None
