"""Search adapter that reads the company's own homepage, refusing to reach private addresses."""

from __future__ import annotations

import asyncio
import codecs
import functools
import http.cookiejar
import ipaddress
import re
from dataclasses import dataclass

import httpx
import tldextract

from firmsift.adapters.address_policy import Resolver, first_refused, resolve_addresses
from firmsift.adapters.html_evidence import TITLE_CHARS, PageText, bounded, extract_page
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence

_HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_DEFAULT_PORTS = {"https": 443, "http": 80}
_HEADERS = {
    "User-Agent": "firmsift/0.1 (company classifier; reads homepages)",
    "Accept": "text/html,application/xhtml+xml;q=0.9",
    # Decompression could turn max_bytes on the wire into far more in memory.
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
    domain is recorded in the evidence. Reads stop after max_bytes; the whole fetch, both
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
        self._client: httpx.AsyncClient | None = None

    async def gather(self, domain: str) -> list[Evidence]:
        """One Evidence item: the page title and what the page says about itself."""
        if not _HOSTNAME.fullmatch(domain):
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
        """Close the HTTP client, if one was created."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

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
            url = _next_url(url, location)
            target = registrable_domain(_host(url))
            if target != origin and target not in left_for:
                left_for.append(target)
        raise ProviderError(f"homepage: more than {self._max_redirects} redirects from {domain}")

    async def _get(self, url: httpx.URL) -> tuple[str | None, str]:
        """(Location, "") for a redirect, (None, html) for a page; ProviderError otherwise."""
        host = _host(url)
        port = url.port or self._port or _DEFAULT_PORTS[url.scheme]
        address = await self._checked_address(host, port)
        target = httpx.URL(scheme=url.scheme, host=address, port=port, raw_path=url.raw_path)
        headers = {**_HEADERS, "Host": url.netloc.decode("ascii")}
        extensions = {"sni_hostname": host} if url.scheme == "https" else {}
        try:
            async with self._http().stream(
                "GET", target, headers=headers, extensions=extensions, timeout=self._timeout
            ) as response:
                if response.status_code in _REDIRECTS:
                    location = response.headers.get("location")
                    if not location:
                        raise ProviderError(f"homepage: {url} redirects without a Location")
                    return location, ""
                if not response.is_success:
                    raise ProviderError(f"homepage: {url} answered HTTP {response.status_code}")
                media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if media_type not in _HTML_TYPES:
                    raise ProviderError(f"homepage: {url} is not HTML ({media_type or 'no type'})")
                body = await self._read_bounded(response)
                return None, body.decode(_charset(response), errors="replace")
        except httpx.TransportError as exc:
            raise _Unreachable(f"{type(exc).__name__} at {url}") from None

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

    async def _read_bounded(self, response: httpx.Response) -> bytes:
        """At most max_bytes of the body; the rest is never read (the parser copes with a cut)."""
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk[: self._max_bytes - len(body)]
            if len(body) >= self._max_bytes:
                break
        return bytes(body)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            no_cookies = http.cookiejar.CookieJar(
                policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
            )
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,  # a proxy would defeat connecting to the checked address
                cookies=no_cookies,
                limits=httpx.Limits(max_keepalive_connections=0),
            )
        return self._client

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


def _host(url: httpx.URL) -> str:
    return url.raw_host.decode("ascii").lower()


def _next_url(url: httpx.URL, location: str) -> httpx.URL:
    try:
        following = url.join(location.strip())
    except (httpx.InvalidURL, UnicodeError):
        raise ProviderError(f"homepage: {url} redirects to an invalid URL") from None
    if following.scheme not in _DEFAULT_PORTS or not following.raw_host:
        raise ProviderError(f"homepage: {url} redirects to a non-web URL ({following.scheme})")
    return following.copy_with(fragment=None)


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
