"""The resolver port: one name's DNS, as the pre-check reads it (addresses, CNAME chain, zone NS)."""

from __future__ import annotations

from typing import Protocol

from firmsift.domain.site_facts import DnsFacts, DnsOutcome

__all__ = ["DnsFacts", "DnsOutcome", "Resolver"]


class Resolver(Protocol):
    async def look_up(self, name: str) -> DnsFacts:
        """The A and AAAA addresses of `name`, the CNAME chain followed to reach them, and the
        name servers of the zone `name` belongs to.

        Every DNS outcome is a fact, never an exception: NXDOMAIN, a name with no address,
        a resolver failure (SERVFAIL, REFUSED, ...) and a timeout each have their DnsOutcome, and
        a look-up returns within the resolver's time limit whatever the servers do. The name
        servers are best effort: () when they could not be found."""
