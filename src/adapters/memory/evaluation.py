"""In-memory evidence snapshots and LLM response cache, for tests of the evaluation run."""

from __future__ import annotations

from firmsift.domain.evaluation import CachedCompletion, GatheredEvidence
from firmsift.domain.site_status import SiteVerdict


class InMemorySnapshots:
    def __init__(self) -> None:
        self.recorded: dict[str, dict[str, GatheredEvidence]] = {}
        self.site_statuses: dict[str, SiteVerdict] = {}

    def load(self, provider: str) -> dict[str, GatheredEvidence]:
        return dict(self.recorded.get(provider, {}))

    def save(self, provider: str, domain: str, gathered: GatheredEvidence) -> None:
        self.recorded.setdefault(provider, {})[domain] = gathered

    def load_site_statuses(self) -> dict[str, SiteVerdict]:
        return dict(self.site_statuses)

    def save_site_status(self, domain: str, verdict: SiteVerdict) -> None:
        self.site_statuses[domain] = verdict


class InMemoryCompletionCache:
    def __init__(self) -> None:
        self.entries: dict[str, CachedCompletion] = {}

    def get(self, key: str) -> CachedCompletion | None:
        return self.entries.get(key)

    def put(self, key: str, completion: CachedCompletion) -> None:
        self.entries[key] = completion

