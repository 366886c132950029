"""Which IP addresses an outgoing fetch may reach: the server-side request forgery (SSRF) check."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable

from firmsift.domain.errors import ProviderError

# Resolves (host, port) to IP address strings; injectable so tests never touch DNS.
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def refusal_reason(address: str) -> str | None:
    """Why `address` must not be fetched (loopback, private, ...), or None for a public one.

    IPv6 forms that embed an IPv4 address (mapped, 6to4, Teredo, NAT64) are judged by
    the IPv4 address they lead to."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    for embedded in _embedded_ipv4(ip):
        reason = refusal_reason(str(embedded))
        if reason:
            return f"{reason} (embedded in {ip})"
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
        ("not globally routable", not ip.is_global),
    )
    return next((name for name, hit in checks if hit), None)


def first_refused(addresses: Iterable[str]) -> tuple[str, str] | None:
    """The first (address, reason) that may not be fetched; one bad address refuses the host,
    since the connection could land on any of them."""
    for address in addresses:
        reason = refusal_reason(address)
        if reason:
            return address, reason
    return None


def _embedded_ipv4(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> list[ipaddress.IPv4Address]:
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    found = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
    if ip in _NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [candidate for candidate in found if candidate is not None]


async def resolve_addresses(host: str, port: int) -> list[str]:
    """All addresses `host` resolves to, in resolver order, via the event loop's getaddrinfo."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ProviderError(f"could not resolve {host}: {exc}") from exc
    addresses: list[str] = []
    for _family, _type, _proto, _canonname, sockaddr in infos:
        if sockaddr[0] not in addresses:
            addresses.append(str(sockaddr[0]))
    if not addresses:
        raise ProviderError(f"could not resolve {host}: no addresses")
    return addresses
