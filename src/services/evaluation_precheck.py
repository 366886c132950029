"""The pre-check in an evaluation run: each labelled domain looked at once for the whole run (not
once per candidate), as the worker looks before paying the LLM, and recorded with the evidence
snapshots so a replay sees the same statuses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from firmsift.domain.site_status import SiteStatus, SiteVerdict
from firmsift.machinery.inflight import InFlight
from firmsift.services.precheck import ENDING_STATUSES

if TYPE_CHECKING:
    from firmsift.ports.evaluation import EvidenceSnapshots
    from firmsift.services.precheck import Precheck


class SiteStatuses(Protocol):
    async def status_for(self, domain: str) -> SiteVerdict | None:
        """The domain's pre-check verdict; None when it was not pre-checked."""


class LiveSiteStatuses:
    """Looks at each domain once per run, however many candidates ask, and records the verdict
    when given snapshots to record into. A recording resumes: verdicts recorded earlier are
    kept, except `unknown` (the DNS lookup itself failed), which is looked at again."""

    def __init__(self, precheck: Precheck, record_to: EvidenceSnapshots | None = None) -> None:
        self.precheck, self.record_to = precheck, record_to
        self._seen: dict[str, SiteVerdict] = {
            domain: verdict for domain, verdict in (record_to.load_site_statuses() if record_to else {}).items()
            if verdict.status is not SiteStatus.UNKNOWN
        }
        self._inflight: InFlight[SiteVerdict] = InFlight()

    async def status_for(self, domain: str) -> SiteVerdict:
        if domain not in self._seen:
            self._seen[domain], _ = await self._inflight.run(domain, lambda: self._look(domain))
        return self._seen[domain]

    async def _look(self, domain: str) -> SiteVerdict:
        verdict = await self.precheck.look(domain)
        if self.record_to is not None:
            self.record_to.save_site_status(domain, verdict)
        return verdict


class ReplayedSiteStatuses:
    """Verdicts recorded earlier: no DNS lookup, no homepage fetch. A domain recorded without one
    (snapshots made before the pre-check, or with it off) is not pre-checked: it goes to the LLM."""

    def __init__(self, snapshots: EvidenceSnapshots) -> None:
        self._recorded = snapshots.load_site_statuses()

    async def status_for(self, domain: str) -> SiteVerdict | None:
        return self._recorded.get(domain)

    def ends(self, domain: str) -> bool:
        """Whether the recorded verdict ends the domain: then no evidence was recorded, nor is needed."""
        verdict = self._recorded.get(domain)
        return verdict is not None and verdict.status in ENDING_STATUSES
