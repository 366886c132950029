"""Evaluation ports: recorded search evidence and the LLM response cache."""

from __future__ import annotations

from typing import Protocol

from firmsift.domain.evaluation import CachedCompletion, GatheredEvidence
from firmsift.domain.site_status import SiteVerdict


class EvidenceSnapshots(Protocol):
    """Search evidence recorded once per (search provider, domain), replayed for every candidate."""

    def load(self, provider: str) -> dict[str, GatheredEvidence]:
        """Every domain recorded for `provider` (the latest recording of each)."""

    def save(self, provider: str, domain: str, gathered: GatheredEvidence) -> None:
        """Record one domain's evidence; durable once this returns."""

    def load_site_statuses(self) -> dict[str, SiteVerdict]:
        """Every domain's recorded pre-check verdict (the latest of each); a domain absent was
        not pre-checked (snapshots recorded before the pre-check existed have none)."""

    def save_site_status(self, domain: str, verdict: SiteVerdict) -> None:
        """Record one domain's pre-check verdict; durable once this returns."""


class CompletionCache(Protocol):
    """LLM completions already paid for, by key (model, API base, prompt hash, evidence hash)."""

    def get(self, key: str) -> CachedCompletion | None: ...

    def put(self, key: str, completion: CachedCompletion) -> None:
        """Durable once this returns, so an interrupted run resumes without paying twice."""
