"""The spend ledger port: what jobs spent on the LLM over a span of time, for one owner or all."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from firmsift.domain.spend import Spend


class SpendLedger(Protocol):
    async def spend_between(self, start: datetime, end: datetime, owner: str | None = None) -> Spend:
        """The spend of every domain result that finished in [start, end), of the jobs of `owner`
        (None: of every owner). Results whose cost is unknown are counted in cost_unknown_domains."""
