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

