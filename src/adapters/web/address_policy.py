"""Which IP addresses an outgoing fetch may reach: the server-side request forgery (SSRF) check."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable

from firmsift.domain.errors import ProviderError

# Resolves (host, port) to IP address strings; injectable so tests never touch DNS.
Resolver = Callable[[str, int], Awaitable[list[str]]]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _networks(*rows: tuple[str, str]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(prefix), reason) for prefix, reason in rows)


# The IANA special-purpose address registries (IPv4 and IPv6, as of 2025), every block not
# "globally reachable", written out so the policy does not depend on the Python version's
# ipaddress tables (which, before 3.11.10 / 3.12.4, let fec0::/10 and others through). Blocks
# the registry marks reachable (AS112, AMT, 192.0.0.9-10 anycast, ...) are refused too where a
# company homepage cannot live in them; a homepage never needs any of these.
_REFUSED_V4 = _networks(
    ("0.0.0.0/8", "unspecified"),  # "this network"
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "deprecated 6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),  # includes 255.255.255.255, limited broadcast
)
_REFUSED_V6 = _networks(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "deprecated IPv4-compatible"),
    ("::ffff:0:0/96", "IPv4-mapped"),
    ("::ffff:0:0:0/96", "IPv4-translated"),
    ("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),
    ("100::/64", "discard-only"),
    ("100:0:0:1::/64", "dummy prefix"),
    ("2001::/23", "IETF protocol assignments"),  # Teredo, benchmarking, ORCHID, ...
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "segment routing (SRv6) identifiers"),
    ("fc00::/7", "private"),  # unique local
    ("fe80::/10", "link-local"),
    ("fec0::/10", "deprecated site-local"),
    ("ff00::/8", "multicast"),
)
# Only 2000::/3 is allocated for global unicast; NAT64 (64:ff9b::/96) leads to IPv4.
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def refusal_reason(address: str) -> str | None:
    """Why `address` must not be fetched (loopback, private, ...), or None for a public one.

    IPv6 forms that embed an IPv4 address (6to4, Teredo, NAT64; mapped ones are refused
    outright) are judged by the IPv4 address they lead to. Python's own classification is
    consulted last, so a future Python that knows more can only refuse more."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    for embedded in _embedded_ipv4(ip):
        reason = refusal_reason(str(embedded))
        if reason:
            return f"{reason} (embedded in {ip})"
    if ip in _NAT64:
        return None  # a public IPv4 address through the well-known NAT64 prefix
    table = _REFUSED_V4 if ip.version == 4 else _REFUSED_V6
    listed = next((reason for network, reason in table if ip in network), None)
    if listed:
        return listed
    if isinstance(ip, ipaddress.IPv6Address) and ip not in _GLOBAL_UNICAST_V6:
        return "not global unicast"
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
