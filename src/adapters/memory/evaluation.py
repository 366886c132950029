"""In-memory evidence snapshots and LLM response cache, for tests of the evaluation run."""

from __future__ import annotations

from firmsift.domain.evaluation import CachedCompletion, GatheredEvidence


class InMemorySnapshots:
    def __init__(self) -> None:
        self.recorded: dict[str, dict[str, GatheredEvidence]] = {}

    def load(self, provider: str) -> dict[str, GatheredEvidence]:
        return dict(self.recorded.get(provider, {}))

    def save(self, provider: str, domain: str, gathered: GatheredEvidence) -> None:
        self.recorded.setdefault(provider, {})[domain] = gathered


class InMemoryCompletionCache:
    def __init__(self) -> None:
        self.entries: dict[str, CachedCompletion] = {}

    def get(self, key: str) -> CachedCompletion | None:
        return self.entries.get(key)

    def put(self, key: str, completion: CachedCompletion) -> None:
        self.entries[key] = completion


class FixedPricing:
    """Prices in USD per million tokens, the same for every model; None for models in `unknown`."""

    def __init__(self, per_input: float, per_output: float, unknown: frozenset[str] = frozenset()) -> None:
        self.per_input, self.per_output, self.unknown = per_input, per_output, unknown

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        if model in self.unknown:
            return None
        return (prompt_tokens * self.per_input + completion_tokens * self.per_output) / 1_000_000
