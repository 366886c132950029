"""Search adapter that reads the company's own homepage, refusing to reach private addresses.

It is also the pre-check's homepage look (ports/homepage_look.py): the page looked at is kept a
short while, so the evidence that follows is read from it instead of fetched twice.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping

from firmsift.adapters.search.homepage_fetch import (
    HTML_TYPES,
    FetchFailed,
    Fetched,
    PageFetcher,
    registrable_domain,
)
from firmsift.adapters.search.html_evidence import TITLE_CHARS, PageText, bounded, extract_page
from firmsift.adapters.web.address_policy import Resolver
from firmsift.adapters.web.redirect_targets import is_host_name
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence
from firmsift.domain.site_facts import HomepageLook, HttpFacts, HttpFailure
from firmsift.domain.site_signatures import PageView, Signatures

__all__ = ["HomepageSearch", "registrable_domain"]

KEPT_PAGES = 64  # pages looked at and kept for the evidence that follows
KEPT_SECONDS = 120.0


class HomepageSearch:
    """Evidence from the domain's own site: https first, then http.

    Redirects are followed by hand (at most max_redirects; see homepage_fetch.PageFetcher). A
    redirect to another registrable domain is recorded in the evidence. A redirect that cannot
    be followed (not http(s), no valid host or port, malformed) is a ProviderError. Reads stop
    after max_bytes of decoded page, however the server compressed it (gzip and deflate are
    inflated a piece at a time; a body inflating more than 100:1 or in another encoding is
    refused); the whole fetch, both schemes included, is bounded by total_timeout.

    A page that shows a bot wall or challenge of `signatures` is never evidence: gather raises a
    ProviderError saying so, and a search chain asks its next provider.

    `port` connects to that port instead of the scheme's default whenever a URL names none, and
    `pinned` maps host names to the (address, port or None) to connect to (FIRMSIFT_HOMEPAGE_RESOLVE):
    hooks for tests against local servers and for sites served on unusual ports. `proxy` (and
    `no_proxy`) send the fetches through an outbound proxy, as the network requires.
    """

    name = "homepage"

    def __init__(
        self,
        *,
        timeout: float = 10.0,
        total_timeout: float = 20.0,
        max_bytes: int = 512_000,
        max_redirects: int = 5,
        snippet_chars: int = 500,
        allow_private_addresses: bool = False,
        resolver: Resolver | None = None,
        port: int | None = None,
        pinned: Mapping[str, tuple[str, int | None]] | None = None,
        proxy: str | None = None,
        no_proxy: str = "",
        signatures: Signatures | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._total_timeout = total_timeout
        self._snippet_chars = snippet_chars
        self._signatures = signatures or Signatures()
        self._fetcher = PageFetcher(timeout=timeout, max_bytes=max_bytes, max_redirects=max_redirects,
                                    allow_private_addresses=allow_private_addresses, resolver=resolver,
                                    port=port, pinned=pinned, proxy=proxy, no_proxy=no_proxy)
        self._clock = clock
        self._kept: OrderedDict[str, tuple[float, Fetched]] = OrderedDict()

    async def gather(self, domain: str) -> list[Evidence]:
        """One Evidence item: the page title and what the page says about itself."""
        if not is_host_name(domain):
            raise ProviderError(f"homepage: {domain!r} is not a host name")
        try:
            async with asyncio.timeout(self._total_timeout):
                page = self._take_kept(domain) or await self._fetcher.fetch(domain)
                self._check_usable(domain, page)
                # Parsing half a megabyte of hostile HTML is CPU work: off the event loop, so
                # heartbeats, leases and the API keep running, and inside the time limit.
                text = await asyncio.to_thread(extract_page, page.html, text_chars=self._snippet_chars)
        except TimeoutError:
            raise ProviderError(f"homepage: {domain} took longer than {self._total_timeout:g}s") from None
        return self._evidence(domain, page, text)

    async def look(self, domain: str) -> HomepageLook:
        """The pre-check's look: the response (any status) or why there was none. Kept for gather."""
        own = registrable_domain(domain)
        if not is_host_name(domain):
            return HomepageLook(HttpFacts(failure=HttpFailure.OTHER, failure_detail="not a host name"), own)
        try:
            async with asyncio.timeout(self._total_timeout):
                page = await self._fetcher.fetch(domain)
        except TimeoutError:
            return HomepageLook(HttpFacts(failure=HttpFailure.TIMEOUT,
                                          failure_detail=f"no response within {self._total_timeout:g}s"), own)
        except FetchFailed as failed:
            return HomepageLook(HttpFacts(failure=failed.failure, failure_detail=str(failed)), own)
        self._keep(domain, page)
        return HomepageLook(page.facts(), own)

    async def aclose(self) -> None:
        """Close the HTTP transport, if one was created."""
        await self._fetcher.aclose()

    def _keep(self, domain: str, page: Fetched) -> None:
        self._kept[domain] = (self._clock(), page)
        self._kept.move_to_end(domain)
        while len(self._kept) > KEPT_PAGES:
            self._kept.popitem(last=False)

    def _take_kept(self, domain: str) -> Fetched | None:
        kept = self._kept.pop(domain, None)
        if kept is None or self._clock() - kept[0] > KEPT_SECONDS:
            return None
        return kept[1]

    def _check_usable(self, domain: str, page: Fetched) -> None:
        """A ProviderError unless the page can be evidence: a wall's page never is."""
        view = PageView.of(domain, page.facts())
        for wall in self._signatures.walls:
            if wall.markers.matches(view):
                raise ProviderError(f"homepage: {domain} is behind a {wall.service} {wall.what}; "
                                    "its page is not evidence")
        if not 200 <= page.status < 300:
            raise ProviderError(f"homepage: {page.url} answered HTTP {page.status}")
        if page.media_type not in HTML_TYPES:
            raise ProviderError(f"homepage: {page.url} is not HTML ({page.media_type[:80] or 'no type'})")
        if page.unreadable:
            raise ProviderError(f"homepage: {page.url} answered {page.unreadable}")

    def _evidence(self, domain: str, page: Fetched, text: PageText) -> list[Evidence]:
        note = f"{domain} redirected to {', '.join(page.left_for)}" if page.left_for else ""
        og_about = text.og_description if text.og_description != text.description else ""
        parts = [part for part in (note, text.description, og_about, text.text) if part]
        title = text.title or text.og_title
        if not parts and not title:
            return []
        return [
            Evidence(
                url=str(page.url),
                title=bounded(title, TITLE_CHARS),
                snippet=bounded(" | ".join(parts), self._snippet_chars),
            )
        ]
