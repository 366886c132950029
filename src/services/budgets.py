"""Daily spend limits against the store: refuse new work when a limit is reached, tell the
worker when a job's owner may not spend now, and report a key's spend today (services of
`firmsift keys`, the HTTP intake and the worker)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.budgets import BudgetExhausted, SpendWindow, check_limit, reached, window_of
from firmsift.domain.clock import utc_now
from firmsift.domain.keys import ApiKey, ApiKeyNotFound, Caller
from firmsift.domain.spend import Spend
from firmsift.domain.spend_reservations import RESERVATION_LIFETIME, SpendReservation

if TYPE_CHECKING:
    from firmsift.ports.keys import ApiKeyStore
    from firmsift.ports.spend import SpendAccounts


@dataclass(frozen=True)
class KeySpend:
    """A key with its limit and what its jobs spent in the current UTC day."""

    key: ApiKey
    window: SpendWindow
    spend: Spend


class Budgets:
    """The global daily limit (None: none) and each key's own, checked against the ledger.
    Spend is what finished in the current UTC day: a result's cost counts on the day it finished;
    results of unknown cost count as 0 USD (and are reported apart, in cost_unknown_domains)."""

    def __init__(self, ledger: SpendAccounts, keys: ApiKeyStore, global_limit_usd: float | None, *,
                 now: Callable[[], datetime] = utc_now) -> None:
        self.ledger = ledger
        self.keys = keys
        self.global_limit_usd = check_limit(global_limit_usd)
        self.now = now

    async def check(self, caller: Caller) -> None:
        """Raise BudgetExhausted if the caller's key limit or the global limit is reached."""
        refusal = await self._refusal(caller.owner, caller.daily_limit_usd)
        if refusal is not None:
            raise refusal

    async def reserve(self, owner: str, amount_usd: float) -> BudgetExhausted | str | None:
        """Hold `amount_usd` of the owner's (and everyone's) daily spend for a call about to start,
        unless what finished plus what is held already reaches a limit: the hold's id (release it
        once the call's cost is stored), None when no limit applies (nothing held), or why not. A
        key revoked or gone since keeps its last limit (its jobs were accepted under it)."""
        key = await self.keys.get_key(owner) if owner else None
        key_limit = key.daily_limit_usd if key else None
        if key_limit is None and self.global_limit_usd is None:
            return None
        now = self.now()
        window = window_of(now)
        hold = SpendReservation(uuid.uuid4().hex, owner, amount_usd, now + RESERVATION_LIFETIME)
        refused = await self.ledger.reserve(hold, now, window.start, window.end, key_limit, self.global_limit_usd)
        if refused is None:
            return hold.id
        scope, spent = refused
        limit = key_limit if scope == "key" else self.global_limit_usd
        assert limit is not None
        return BudgetExhausted(scope, limit, spent, window, now)

    async def release(self, reservation_id: str) -> None:
        await self.ledger.release(reservation_id)

    async def _refusal(self, owner: str, key_limit: float | None) -> BudgetExhausted | None:
        if key_limit is None and self.global_limit_usd is None:
            return None  # no query at all for the common case
        now = self.now()
        window = window_of(now)
        if key_limit is not None and owner:
            spent = (await self.ledger.spend_between(window.start, window.end, owner)).cost_usd
            if reached(key_limit, spent):
                return BudgetExhausted("key", key_limit, spent, window, now)
        if self.global_limit_usd is not None:
            spent = (await self.ledger.spend_between(window.start, window.end)).cost_usd
            if reached(self.global_limit_usd, spent):
                return BudgetExhausted("global", self.global_limit_usd, spent, window, now)
        return None

    async def key_spends(self) -> list[KeySpend]:
        """Every key with its limit and its spend today, oldest key first."""
        window = window_of(self.now())
        return [KeySpend(key, window, await self.ledger.spend_between(window.start, window.end, key.id))
                for key in await self.keys.list_keys()]

    async def total_today(self) -> tuple[SpendWindow, Spend]:
        """Today's spend of every owner, against which the global limit is checked."""
        window = window_of(self.now())
        return window, await self.ledger.spend_between(window.start, window.end)


async def set_daily_limit(key_id: str, limit_usd: float | None, keys: ApiKeyStore) -> ApiKey:
    """Set or remove (None) a key's daily limit; it applies to the key's next request and to its
    paused jobs at their next check."""
    updated = await keys.set_daily_limit(key_id, check_limit(limit_usd))
    if updated is None:
        raise ApiKeyNotFound(key_id)
    return updated
