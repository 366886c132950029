"""Whether the pre-check may believe a negative DNS answer now (the rules: domain/dns_trust.py).

One per worker: it looks the canary names up when a negative answer first needs judging and again
once its last look is `recheck_seconds` old, keeps the recent look-ups' outcomes, and logs one
WARNING when trust is lost (and one INFO when it returns), not one per domain."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from firmsift.domain.dns_trust import CanaryCheck, NegativeRun

if TYPE_CHECKING:
    from firmsift.domain.site_facts import DnsFacts
    from firmsift.ports.resolver import Resolver

log = logging.getLogger(__name__)
RECHECK_SECONDS = 300.0


class DnsTrust:
    """`canaries`: names that must exist (empty: the resolver is believed without a test).
    `proxy_variable`: the name of the environment variable that sends outbound traffic through a
    proxy (HTTPS_PROXY, ...), None when there is none; never its value, which may hold a password."""

    def __init__(self, resolver: Resolver, canaries: Sequence[str], *, proxy_variable: str | None = None,
                 recheck_seconds: float = RECHECK_SECONDS, run: NegativeRun | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._resolver = resolver
        self._canaries = tuple(canaries)
        self._proxy_variable = proxy_variable
        self._recheck_seconds = recheck_seconds
        self._run = run or NegativeRun()
        self._clock = clock
        self._lock = asyncio.Lock()
        self._canary_check: CanaryCheck | None = None
        self._checked_at = 0.0
        self._doubt: str | None = None

    def through_proxy(self) -> str | None:
        """Why local DNS says nothing about a site, or None: behind an outbound proxy, the proxy
        resolves the names (the homepage is fetched through it) and the local resolver may know none."""
        if self._proxy_variable is None:
            return None
        return f"outbound traffic goes through a proxy ({self._proxy_variable} is set)"

    def record(self, facts: DnsFacts) -> None:
        """A domain's look-up, for the run of recent outcomes."""
        self._run.record(facts)

    async def doubt(self) -> str | None:
        """Why a negative answer may not end a domain now, or None when it may."""
        why = await self._canary_doubt() or self._run.doubt()
        self._tell(why)
        return why

    def state(self) -> str:
        """For /readyz: "ok", or "degraded: " and the latest reason negative answers were doubted."""
        return "ok" if self._doubt is None else f"degraded: {self._doubt}"

    async def _canary_doubt(self) -> str | None:
        if not self._canaries:
            return None
        async with self._lock:  # one look at the canaries at a time, however many domains wait on it
            if self._canary_check is None or self._clock() - self._checked_at >= self._recheck_seconds:
                facts = await asyncio.gather(*(self._resolver.look_up(name) for name in self._canaries))
                self._canary_check = CanaryCheck.of(self._canaries, facts)
                self._checked_at = self._clock()
            return self._canary_check.doubt()

    def _tell(self, why: str | None) -> None:
        if why is not None and self._doubt is None:
            log.warning("the pre-check does not trust negative DNS answers: %s; such domains are marked unknown and "
                        "go on to the LLM (FIRMSIFT_DNS_CANARIES, FIRMSIFT_DNS_SERVERS)", why)
        elif why is None and self._doubt is not None:
            log.info("the pre-check trusts negative DNS answers again")
        self._doubt = why
