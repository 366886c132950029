"""FIRMSIFT_HOMEPAGE_RESOLVE: host names pinned to addresses, as curl's --resolve does.

Written `host=ip[:port]`, pairs separated by commas: `acme.example=127.0.0.1:8081,
www.acme.example=127.0.0.1:8081,v6.example=[::1]:8082`. An IPv6 address with a port goes in
brackets; without a port the brackets are optional.
"""

from __future__ import annotations

import ipaddress
import re

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")

PinnedHosts = dict[str, tuple[str, int | None]]


class InvalidPinnedHosts(ValueError):
    """The setting is malformed; the message names the pair and what is wrong with it."""


def parse_pinned_hosts(text: str) -> PinnedHosts:
    """host -> (address, port or None), hosts lower case; {} for an empty text."""
    pinned: PinnedHosts = {}
    for raw in text.split(","):
        pair = raw.strip()
        if not pair:
            continue
        host, equals, target = pair.partition("=")
        if not equals:
            raise InvalidPinnedHosts(f"{pair[:80]!r}: expected host=ip[:port]")
        name = _host(host.strip(), pair)
        if name in pinned:
            raise InvalidPinnedHosts(f"{pair[:80]!r}: {name} is pinned twice")
        pinned[name] = _target(target.strip(), pair)
    return pinned


def _host(host: str, pair: str) -> str:
    """A host name in ASCII (letters, digits, hyphens; dot-separated labels of 1-63 characters)."""
    name = host.lower().rstrip(".")
    labels = name.split(".")
    if len(name) > 253 or len(labels) < 2 or not all(_LABEL.fullmatch(label) for label in labels):
        raise InvalidPinnedHosts(f"{pair[:80]!r}: {host[:60]!r} is not a host name (ASCII, two labels or more)")
    return name


def _target(target: str, pair: str) -> tuple[str, int | None]:
    address, port = target, ""
    if target.startswith("["):
        address, closing, rest = target[1:].partition("]")
        if not closing or (rest and not rest.startswith(":")):
            raise InvalidPinnedHosts(f"{pair[:80]!r}: expected [ipv6]:port")
        port = rest[1:] if rest else ""
        if rest and not port:
            raise InvalidPinnedHosts(f"{pair[:80]!r}: the port is empty")
    elif target.count(":") == 1:
        address, _, port = target.partition(":")
        if not port:
            raise InvalidPinnedHosts(f"{pair[:80]!r}: the port is empty")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise InvalidPinnedHosts(f"{pair[:80]!r}: {address[:60]!r} is not an IP address") from None
    if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise InvalidPinnedHosts(f"{pair[:80]!r}: the port must be 1-65535")
    return str(ip), int(port) if port else None
