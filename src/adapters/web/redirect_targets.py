"""Where a homepage redirect may lead: http(s) URLs with a valid host and port, of bounded length."""

from __future__ import annotations

import ipaddress
import re

import httpx

from firmsift.domain.errors import ProviderError

DEFAULT_PORTS = {"https": 443, "http": 80}
# Evidence URLs are bounded as the search APIs bound theirs (search.api.URL_CHARS).
URL_CHARS = 2048
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def host_of(url: httpx.URL) -> str:
    """The URL's host as it goes on the wire: ASCII (IDNA-encoded), lower case."""
    return url.raw_host.decode("ascii").lower()


def next_url(url: httpx.URL, location: str) -> httpx.URL:
    """Where a redirect leads, or a ProviderError naming why it cannot be followed: not http(s),
    malformed, no valid host or port, or longer than a URL evidence may carry."""
    if len(location) > URL_CHARS:
        raise ProviderError(f"homepage: {url} redirects to a URL over {URL_CHARS} characters")
    try:
        following = url.join(location.strip()).copy_with(fragment=None)
        host, port = host_of(following), following.port
    except (httpx.InvalidURL, UnicodeError, ValueError):
        raise ProviderError(f"homepage: {url} redirects to an invalid URL") from None
    if following.scheme not in DEFAULT_PORTS:
        raise ProviderError(f"homepage: {url} redirects to a non-web URL ({following.scheme[:20]})")
    if not (is_host_name(host) or is_ip(host)):
        raise ProviderError(f"homepage: {url} redirects to a URL without a valid host")
    if port is not None and not 0 < port < 65536:
        raise ProviderError(f"homepage: {url} redirects to a URL with an invalid port")
    if len(str(following)) > URL_CHARS:
        raise ProviderError(f"homepage: {url} redirects to a URL over {URL_CHARS} characters")
    return following


def is_host_name(host: str) -> bool:
    """Letters, digits and hyphens in dot-separated labels of 1-63 characters, 253 in all."""
    return len(host) <= 253 and all(_LABEL.fullmatch(label) for label in host.split("."))


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
