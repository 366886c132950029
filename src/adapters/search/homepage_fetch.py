"""One bounded fetch of a homepage (https, then http), every hop checked against the address policy.

Shared by the homepage search provider's evidence and the pre-check's look: both read the same
response, so a domain's homepage is fetched once for the two.
"""

from __future__ import annotations

import codecs
import functools
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.request import proxy_bypass_environment

import httpx
import tldextract

from firmsift.adapters.web.address_policy import Resolver, first_refused, resolve_addresses
from firmsift.adapters.web.bounded_body import BodyLimits, UnreadableBody, read_body
from firmsift.adapters.web.redirect_targets import DEFAULT_PORTS, host_of, is_ip, next_url
from firmsift.domain.errors import ProviderError
from firmsift.domain.site_facts import HttpFacts, HttpFailure

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_HEADERS = {
    "User-Agent": "firmsift/0.1 (company classifier; reads homepages)",
    "Accept": "text/html,application/xhtml+xml;q=0.9",
    # Asked for, not relied on: a server that compresses anyway is inflated within max_bytes.
    "Accept-Encoding": "identity",
    # One connection per request: connections are made to a pinned IP, and must never be
    # reused for another host name.
    "Connection": "close",
}
_HEADERS_KEPT = 100


class FetchFailed(ProviderError):
    """No response at all; `failure` says why (the message says it to a reader)."""

    def __init__(self, failure: HttpFailure, message: str) -> None:
        super().__init__(message)
        self.failure = failure


@dataclass(frozen=True)
class Fetched:
    """The response a fetch ended on: any status, its headers, and its page when it is HTML."""

    url: httpx.URL
    status: int
    headers: tuple[tuple[str, str], ...]
    media_type: str
    html: str
    left_for: tuple[str, ...]  # other registrable domains the redirects went through, in order
    unreadable: str = ""  # why the page could not be read (the response is still known)

    def facts(self) -> HttpFacts:
        return HttpFacts(status=self.status, headers=self.headers, final_url=str(self.url),
                         final_registrable_domain=registrable_domain(host_of(self.url)), body=self.html)


class PageFetcher:
    """Fetches a homepage by hand: redirects followed (at most max_redirects), each hop resolved
    and checked against the address policy, and the connection made to the checked address (no
    second DNS lookup an attacker could answer differently). `pinned` maps host names to the
    (address, port or None) to connect to instead of resolving them, like curl's --resolve;
    those addresses are checked like any other. `port` replaces the scheme's default port.

    With `proxy` (an outbound proxy's URL: where the network allows no direct connection), each
    hop goes through it (CONNECT for https) unless `no_proxy` (NO_PROXY's value) names the host:
    the proxy resolves names, so only an address written in the URL, or localhost, is refused here."""

    def __init__(self, *, timeout: float, max_bytes: int, max_redirects: int, allow_private_addresses: bool,
                 resolver: Resolver | None, port: int | None,
                 pinned: Mapping[str, tuple[str, int | None]] | None = None,
                 proxy: str | None = None, no_proxy: str = "") -> None:
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._max_redirects = max_redirects
        self._allow_private = allow_private_addresses
        self._resolve = resolver or resolve_addresses
        self._port = port
        self._pinned = {host.lower().rstrip("."): target for host, target in (pinned or {}).items()}
        self._transport: httpx.AsyncHTTPTransport | None = None
        self._proxy = proxy
        self._no_proxy = no_proxy
        self._proxied: httpx.AsyncHTTPTransport | None = None

    async def fetch(self, domain: str) -> Fetched:
        """The homepage over https, else http; FetchFailed when neither gave a response."""
        try:
            return await self._follow(httpx.URL(f"https://{domain}/"), domain)
        except _Unreachable as https_failure:
            try:
                return await self._follow(httpx.URL(f"http://{domain}/"), domain)
            except _Unreachable as http_failure:
                kinds = {https_failure.failure, http_failure.failure}
                failure = next((k for k in (HttpFailure.TIMEOUT, HttpFailure.TLS) if k in kinds), http_failure.failure)
                raise FetchFailed(failure, f"homepage: {domain} is unreachable over https ({https_failure}) "
                                           f"and http ({http_failure})") from None

    async def aclose(self) -> None:
        for transport in (self._transport, self._proxied):
            if transport is not None:
                await transport.aclose()
        self._transport = self._proxied = None

    async def _follow(self, url: httpx.URL, domain: str) -> Fetched:
        origin = registrable_domain(domain)
        seen: set[str] = set()
        left_for: list[str] = []
        for _ in range(self._max_redirects + 1):
            if str(url) in seen:
                raise FetchFailed(HttpFailure.REDIRECTS, f"homepage: redirect loop at {url}")
            seen.add(str(url))
            fetched = await self._get(url, tuple(left_for))
            if fetched.status not in _REDIRECTS:
                return fetched
            location = next((value for name, value in fetched.headers if name.lower() == "location"), "")
            if not location:
                raise FetchFailed(HttpFailure.REDIRECTS, f"homepage: {url} redirects without a Location")
            try:
                url = next_url(url, location)
            except ProviderError as error:
                raise FetchFailed(HttpFailure.REDIRECTS, str(error)) from None
            target = registrable_domain(host_of(url))
            if target != origin and target not in left_for:
                left_for.append(target)
        raise FetchFailed(HttpFailure.REDIRECTS, f"homepage: more than {self._max_redirects} redirects from {domain}")

    async def _get(self, url: httpx.URL, left_for: tuple[str, ...]) -> Fetched:
        host = host_of(url)
        extensions: dict[str, object] = {"timeout": httpx.Timeout(self._timeout).as_dict()}
        if self._through_proxy(host):
            self._refuse_named_private(host)
            transport = self._proxy_transport()
            request = httpx.Request("GET", url, headers=_HEADERS, extensions=extensions)
        else:
            address, port = await self._checked_address(host, url.port or self._port or DEFAULT_PORTS[url.scheme])
            target = httpx.URL(scheme=url.scheme, host=address, port=port, raw_path=url.raw_path)
            if url.scheme == "https":
                extensions["sni_hostname"] = host
            transport = self._http()
            request = httpx.Request("GET", target, headers={**_HEADERS, "Host": url.netloc.decode("ascii")},
                                    extensions=extensions)
        try:
            # The transport, not a client: a client parses every Location itself (even with
            # redirects off) and raises on a hostile one before this code could judge it.
            response = await transport.handle_async_request(request)
            try:
                return await self._read(url, response, left_for)
            finally:
                await response.aclose()
        except httpx.TransportError as exc:
            raise _Unreachable(_failure_of(exc), f"{type(exc).__name__} at {url}") from None

    async def _read(self, url: httpx.URL, response: httpx.Response, left_for: tuple[str, ...]) -> Fetched:
        media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        received = tuple((name, value) for name, value in response.headers.multi_items()[:_HEADERS_KEPT])
        fetched = Fetched(url=url, status=response.status_code, headers=received, media_type=media_type,
                          html="", left_for=left_for)
        if response.status_code in _REDIRECTS or media_type not in HTML_TYPES:
            return fetched
        try:
            body = await read_body(response, BodyLimits(self._max_bytes), cut=True)
        except UnreadableBody as exc:
            return replace(fetched, unreadable=str(exc))
        return replace(fetched, html=body.decode(_charset(response), errors="replace"))

    async def _checked_address(self, host: str, port: int) -> tuple[str, int]:
        """The address and port to connect to, after refusing private ones (unless allowed)."""
        pinned = self._pinned.get(host)
        if pinned is not None:
            addresses, port = [pinned[0]], pinned[1] or port
        else:
            try:
                addresses = [str(ipaddress.ip_address(host))]
            except ValueError:
                try:
                    addresses = await self._resolve(host, port)
                except ProviderError as exc:
                    raise FetchFailed(HttpFailure.OTHER, f"homepage: {exc}") from None
        if not addresses:
            raise FetchFailed(HttpFailure.OTHER, f"homepage: {host} resolves to no address")
        refused = None if self._allow_private else first_refused(addresses)
        if refused:
            address, reason = refused
            raise FetchFailed(HttpFailure.FORBIDDEN_ADDRESS,
                              f"homepage: refusing to fetch {host}: it resolves to {address} ({reason})")
        return addresses[0], port

    def _refuse_named_private(self, host: str) -> None:
        """Through a proxy the names are the proxy's to resolve, but an address written in a URL (a
        redirect to 169.254.169.254, 10.0.0.1) or localhost is refused here, as without one."""
        if self._allow_private:
            return
        if host == "localhost" or host.endswith(".localhost"):
            raise FetchFailed(HttpFailure.FORBIDDEN_ADDRESS, f"homepage: refusing to fetch {host}: a loopback name")
        try:
            literal = str(ipaddress.ip_address(host))
        except ValueError:
            return
        refused = first_refused([literal])
        if refused:
            raise FetchFailed(HttpFailure.FORBIDDEN_ADDRESS, f"homepage: refusing to fetch {host} ({refused[1]})")

    def _through_proxy(self, host: str) -> bool:
        return self._proxy is not None and host not in self._pinned and not proxy_bypass_environment(
            host, proxies={"no": self._no_proxy})

    def _proxy_transport(self) -> httpx.AsyncHTTPTransport:
        if self._proxied is None:
            self._proxied = httpx.AsyncHTTPTransport(proxy=self._proxy, limits=httpx.Limits(max_keepalive_connections=0))
        return self._proxied

    def _http(self) -> httpx.AsyncHTTPTransport:
        if self._transport is None:
            # No client layer at all: no cookies, no redirects, no proxy from the environment
            # (which would defeat connecting to the checked address).
            self._transport = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_keepalive_connections=0))
        return self._transport


class _Unreachable(Exception):
    """A transport failure: the next scheme may still work."""

    def __init__(self, failure: HttpFailure, message: str) -> None:
        super().__init__(message)
        self.failure = failure


def _failure_of(error: httpx.TransportError) -> HttpFailure:
    if isinstance(error, httpx.TimeoutException):
        return HttpFailure.TIMEOUT
    words = str(error).lower()
    if "ssl" in words or "tls" in words or "certificate" in words:
        return HttpFailure.TLS
    if isinstance(error, httpx.ConnectError):
        return HttpFailure.REFUSED
    return HttpFailure.OTHER


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
    """The part of `host` a registrant controls (shop.example.co.uk -> example.co.uk). Under a
    top-level domain the list does not know (.example, .test, an intranet's), the last two labels
    (www.acme.test -> acme.test); an IP address is itself."""
    host = host.lower().rstrip(".")
    found = _extractor()(host).top_domain_under_public_suffix
    if found or is_ip(host):
        return found or host
    return ".".join(host.split(".")[-2:])
