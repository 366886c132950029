"""The homepage-look port: one bounded fetch of a domain's homepage, as the pre-check reads it."""

from __future__ import annotations

from typing import Protocol

from firmsift.domain.site_facts import HomepageLook

__all__ = ["HomepageLook", "HomepageLooker"]


class HomepageLooker(Protocol):
    async def look(self, domain: str) -> HomepageLook:
        """The homepage's first response after redirects (any HTTP status, with headers and the
        bounded start of the page), or the failure that left no response. Never raises for what
        the site does; returns within the adapter's time limit. An adapter that is also the
        homepage search provider keeps the page a short while, so the evidence that follows is
        read from it instead of fetched again."""
