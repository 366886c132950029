"""The dry run's prices, read from litellm's price map file without importing litellm, agree with
litellm's own cost_per_token for the plain case and say "unknown" where the map has no price."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from firmsift.adapters.llm.price_map import PriceMapPricing, price_map_path
from firmsift.adapters.llm.pricing import LitellmPricing

MODELS = ["gpt-5.4-mini", "openai/gpt-5.4-mini", "gpt-4o-mini", "openai/gpt-4o", "claude-sonnet-4-5",
          "gemini/gemini-2.5-flash", "azure/gpt-4o", "mistral/mistral-small-latest", "deepseek/deepseek-chat",
          "ollama/llama3", "groq/llama-3.1-8b-instant", "no-such-model-anywhere"]


@pytest.mark.parametrize("model", MODELS)
def test_the_map_prices_a_model_as_litellm_does(model: str) -> None:
    expected = LitellmPricing().cost(model, 1000, 100)
    got = PriceMapPricing().cost(model, 1000, 100)
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_overrides_local_models_and_missing_counts_follow_the_worker_rules() -> None:
    pricing = PriceMapPricing({"mine": (2.0, 8.0)}, unpriced=["gpt-4o-mini"])
    assert pricing.cost("mine", 1_000_000, 500_000) == pytest.approx(6.0)
    assert pricing.cost("gpt-4o-mini", 1000, 100) is None  # served locally: no hosted price
    assert pricing.cost("gpt-4o", None, 100) is None


def test_an_entry_without_token_prices_or_a_malformed_one_has_no_price(tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"per-second": {"input_cost_per_second": 0.1},
                                "bad": {"input_cost_per_token": "x", "output_cost_per_token": 1e-6},
                                "ok": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}))
    pricing = PriceMapPricing(path=path)
    assert pricing.cost("per-second", 10, 10) is None and pricing.cost("bad", 10, 10) is None
    assert pricing.cost("vendor/ok", 1000, 1000) == pytest.approx(0.003)


def test_reading_the_map_never_imports_litellm() -> None:
    assert price_map_path() is not None
    program = ("import sys\nfrom firmsift.adapters.llm.price_map import PriceMapPricing\n"
               "assert PriceMapPricing().cost('gpt-4o-mini', 1000, 100) > 0\n"
               "print('litellm' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
