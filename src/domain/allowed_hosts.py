"""FIRMSIFT_ALLOWED_HOSTS: the host names the API answers for, and the host a request's Host
header names, both in the form they are compared in: lower case, no port, no trailing dot, an
IPv6 address without brackets and in its short form (`LOCALHOST.:8000` is `localhost`,
`[0:0::1]:8000` is `::1`).

The setting is comma-separated: names (`firmsift.example.com`), IPv4 addresses, IPv6 addresses
with or without brackets, or `*` for any host. A port is not part of an entry: every port of an
allowed name is served.
"""

from __future__ import annotations

import ipaddress
import re

ANY_HOST = "*"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
# Dot-separated labels of letters, digits, hyphens and underscores: a browser sends an
# international name in punycode, so nothing else is a name it would send.
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_PORT = re.compile(r"[0-9]{0,5}")  # RFC 3986 allows an empty port (`host:`)


class InvalidAllowedHosts(ValueError):
    """The setting is malformed; the message names the entry and what is wrong with it."""


def host_name(header: str) -> str | None:
    """The host a Host header value names (`name`, `name:port`, `[ipv6]`, `[ipv6]:port`), in the
    compared form; None when it names no host (a bare IPv6 address is not a Host header)."""
    if not header.isascii():
        return None
    if header.startswith("["):
        inside, closing, rest = header[1:].partition("]")
        if not closing or (rest and not (rest.startswith(":") and _PORT.fullmatch(rest[1:]))):
            return None
        return _ipv6(inside)
    name, colon, port = header.partition(":")
    if colon and not _PORT.fullmatch(port):
        return None
    return _name(name)


def parse_allowed_hosts(text: str) -> frozenset[str] | None:
    """The entries of the comma-separated `text` in the compared form; None when one is `*` (any host)."""
    names: set[str] = set()
    entries = [entry.strip() for entry in text.split(",") if entry.strip()]
    if not entries:
        raise InvalidAllowedHosts("lists no host name: leave it unset for the default, or `*` for any host")
    for entry in entries:
        if entry == ANY_HOST:
            continue
        name = _entry(entry)
        if name is None:
            raise InvalidAllowedHosts(
                f"{entry[:80]!r} is not a host name or IP address (a port is not written: every port is served; "
                f"`{ANY_HOST}` alone allows any host)")
        names.add(name)
    return None if ANY_HOST in entries else frozenset(names)


def _entry(entry: str) -> str | None:
    if not entry.isascii():
        return None
    if entry.startswith("[") and entry.endswith("]"):
        return _ipv6(entry[1:-1])
    return _ipv6(entry) if ":" in entry else _name(entry)


def _ipv6(text: str) -> str | None:
    try:
        return str(ipaddress.IPv6Address(text))  # the short form, lower case
    except ValueError:
        return None


def _name(text: str) -> str | None:
    name = text.lower()
    name = name[:-1] if name.endswith(".") else name  # the root's dot: `localhost.` is `localhost`
    return name if len(name) <= 253 and _NAME.fullmatch(name) else None


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach: 127.0.0.0/8, ::1 and `localhost`."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name or a wildcard such as 0.0.0.0: other machines may reach it


def served_hosts(setting: str | None, listening_on: str, keys_required: bool) -> frozenset[str] | None:
    """The host names the API answers for (None: any host). FIRMSIFT_ALLOWED_HOSTS when set;
    else, without API keys, the loopback names and the address the API listens on; with keys,
    any host: a rebound page holds no key, and no session cookie either (a browser sends cookies
    by host name), so it can do no more than any client reaching the port."""
    if setting is not None:
        return parse_allowed_hosts(setting)
    if keys_required:
        return None
    # Keys are off only on a loopback address (http/auth.py), so it is a name or an address, never a wildcard.
    return LOOPBACK_NAMES | (parse_allowed_hosts(listening_on) or frozenset())
