"""Search adapter that reads the company's own homepage, refusing to reach private addresses."""

from __future__ import annotations

import asyncio
import codecs
import functools
import ipaddress
from dataclasses import dataclass

import httpx
import tldextract

from firmsift.adapters.web.address_policy import Resolver, first_refused, resolve_addresses
from firmsift.adapters.web.bounded_body import BodyLimits, UnreadableBody, read_body
from firmsift.adapters.search.html_evidence import TITLE_CHARS, PageText, bounded, extract_page
from firmsift.adapters.web.redirect_targets import DEFAULT_PORTS, host_of, is_host_name, next_url
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_HEADERS = {
    "User-Agent": "firmsift/0.1 (company classifier; reads homepages)",
    "Accept": "text/html,application/xhtml+xml;q=0.9",
    # Asked for, not relied on: a server that compresses anyway is inflated within max_bytes.
    "Accept-Encoding": "identity",
    # One connection per request: connections are made to a pinned IP, and must never be
    # reused for another host name.
    "Connection": "close",
}


class _Unreachable(Exception):
    """A transport failure: the next scheme may still work."""


@dataclass(frozen=True)
class _Page:
    url: httpx.URL
    html: str
    left_for: tuple[str, ...]


class HomepageSearch:
    """Evidence from the domain's own site: https first, then http.

    Redirects are followed by hand (at most max_redirects) so that every hop is resolved and
    checked against the address policy, and the connection goes to the checked address (no
    second DNS lookup an attacker could answer differently). A redirect to another registrable
    domain is recorded in the evidence. A redirect that cannot be followed (not http(s), no
    valid host or port, malformed) is a ProviderError. Reads stop after max_bytes of decoded
    page, however the server compressed it (gzip and deflate are inflated a piece at a time;
    a body inflating more than 100:1 or in another encoding is refused); the whole fetch, both
    schemes included, is bounded by total_timeout.

    `port` connects to that port instead of the scheme's default whenever a URL names none:
    a hook for tests against a local server and for sites served on unusual ports.
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
    ) -> None:
        self._timeout = timeout
        self._total_timeout = total_timeout
        self._max_bytes = max_bytes
        self._max_redirects = max_redirects
        self._snippet_chars = snippet_chars
        self._allow_private = allow_private_addresses
        self._resolve = resolver or resolve_addresses
        self._port = port
        self._transport: httpx.AsyncHTTPTransport | None = None

    async def gather(self, domain: str) -> list[Evidence]:
        """One Evidence item: the page title and what the page says about itself."""
        if not is_host_name(domain):
            raise ProviderError(f"homepage: {domain!r} is not a host name")
        try:
            async with asyncio.timeout(self._total_timeout):
                page = await self._fetch_either_scheme(domain)
                # Parsing half a megabyte of hostile HTML is CPU work: off the event loop, so
                # heartbeats, leases and the API keep running, and inside the time limit.
                text = await asyncio.to_thread(extract_page, page.html, text_chars=self._snippet_chars)
        except TimeoutError:
            raise ProviderError(
                f"homepage: {domain} took longer than {self._total_timeout:g}s"
            ) from None
        return self._evidence(domain, page, text)

    async def aclose(self) -> None:
        """Close the HTTP transport, if one was created."""
        if self._transport is not None:
            await self._transport.aclose()
            self._transport = None

    async def _fetch_either_scheme(self, domain: str) -> _Page:
        try:
            return await self._follow(httpx.URL(f"https://{domain}/"), domain)
        except _Unreachable as https_failure:
            try:
                return await self._follow(httpx.URL(f"http://{domain}/"), domain)
            except _Unreachable as http_failure:
                raise ProviderError(
                    f"homepage: {domain} is unreachable over https ({https_failure}) "
                    f"and http ({http_failure})"
                ) from None

    async def _follow(self, url: httpx.URL, domain: str) -> _Page:
        origin = registrable_domain(domain)
        seen: set[str] = set()
        left_for: list[str] = []
        for _ in range(self._max_redirects + 1):
            if str(url) in seen:
                raise ProviderError(f"homepage: redirect loop at {url}")
            seen.add(str(url))
            location, html = await self._get(url)
            if location is None:
                return _Page(url=url, html=html, left_for=tuple(left_for))
            url = next_url(url, location)
            target = registrable_domain(host_of(url))
            if target != origin and target not in left_for:
                left_for.append(target)
        raise ProviderError(f"homepage: more than {self._max_redirects} redirects from {domain}")

    async def _get(self, url: httpx.URL) -> tuple[str | None, str]:
        """(Location, "") for a redirect, (None, html) for a page; ProviderError otherwise."""
        host = host_of(url)
        port = url.port or self._port or DEFAULT_PORTS[url.scheme]
        address = await self._checked_address(host, port)
        target = httpx.URL(scheme=url.scheme, host=address, port=port, raw_path=url.raw_path)
        headers = {**_HEADERS, "Host": url.netloc.decode("ascii")}
        extensions: dict[str, object] = {"timeout": httpx.Timeout(self._timeout).as_dict()}
        if url.scheme == "https":
            extensions["sni_hostname"] = host
        request = httpx.Request("GET", target, headers=headers, extensions=extensions)
        try:
            # The transport, not a client: a client parses every Location itself (even with
            # redirects off) and raises on a hostile one before this code could judge it.
            response = await self._http().handle_async_request(request)
            try:
                return await self._read(url, response)
            finally:
                await response.aclose()
        except httpx.TransportError as exc:
            raise _Unreachable(f"{type(exc).__name__} at {url}") from None

    async def _read(self, url: httpx.URL, response: httpx.Response) -> tuple[str | None, str]:
        if response.status_code in _REDIRECTS:
            location = response.headers.get("location")
            if not location:
                raise ProviderError(f"homepage: {url} redirects without a Location")
            return location, ""
        if not response.is_success:
            raise ProviderError(f"homepage: {url} answered HTTP {response.status_code}")
        media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type not in _HTML_TYPES:
            raise ProviderError(f"homepage: {url} is not HTML ({media_type[:80] or 'no type'})")
        try:
            body = await read_body(response, BodyLimits(self._max_bytes), cut=True)
        except UnreadableBody as exc:
            raise ProviderError(f"homepage: {url} answered {exc}") from None
        return None, body.decode(_charset(response), errors="replace")

    async def _checked_address(self, host: str, port: int) -> str:
        """The address to connect to, after refusing private ones (unless allowed)."""
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            try:
                addresses = await self._resolve(host, port)
            except ProviderError as exc:
                raise ProviderError(f"homepage: {exc}") from None
        if not addresses:
            raise ProviderError(f"homepage: {host} resolves to no address")
        refused = None if self._allow_private else first_refused(addresses)
        if refused:
            address, reason = refused
            raise ProviderError(
                f"homepage: refusing to fetch {host}: it resolves to {address} ({reason})"
            )
        return addresses[0]

    def _http(self) -> httpx.AsyncHTTPTransport:
        if self._transport is None:
            # No client layer at all: no cookies, no redirects, no proxy from the environment
            # (which would defeat connecting to the checked address).
            self._transport = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(max_keepalive_connections=0)
            )
        return self._transport

    def _evidence(self, domain: str, page: _Page, text: PageText) -> list[Evidence]:
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


def _charset(response: httpx.Response) -> str:
    name = response.charset_encoding or "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"


@functools.cache
def _extractor() -> tldextract.TLDExtract:
    # The bundled public-suffix snapshot only: no download, no cache directory.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def registrable_domain(host: str) -> str:
    """The part of `host` a registrant controls (shop.example.co.uk -> example.co.uk); the host
    itself when it has no public suffix (an IP address, an unknown top-level domain)."""
    host = host.lower().rstrip(".")
    return _extractor()(host).top_domain_under_public_suffix or host
