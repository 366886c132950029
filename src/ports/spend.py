"""The spend ledger port: what jobs spent on the LLM over a span of time, for one owner or all."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from firmsift.domain.spend import Spend
from firmsift.domain.spend_reservations import SpendReservation


class SpendLedger(Protocol):
    async def spend_between(self, start: datetime, end: datetime, owner: str | None = None) -> Spend:
        """The spend of every domain result that finished in [start, end), of the jobs of `owner`
        (None: of every owner). Results whose cost is unknown are counted in cost_unknown_domains."""


class SpendReservations(Protocol):
    async def reserve(self, reservation: SpendReservation, now: datetime, start: datetime, end: datetime,
                      key_limit: float | None, global_limit: float | None) -> tuple[str, float] | None:
        """Hold `reservation` unless, in [start, end), its owner's finished spend plus the holds
        unexpired at `now` reach `key_limit`, or everyone's reach `global_limit`: then hold nothing
        and return ("key" or "global", that spend plus holds). Checked and held atomically, across
        processes."""

    async def release(self, reservation_id: str) -> None:
        """Drop a hold (its cost, if any, is now in what finished); unknown ids are ignored."""


class SpendAccounts(SpendLedger, SpendReservations, Protocol):
    """What daily limits are checked against: the ledger and the holds, in one store."""
