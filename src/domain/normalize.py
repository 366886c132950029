"""Domain-name normalization and validation: one canonical ASCII host name per company site."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from firmsift.domain.errors import InvalidDomains, Rejection

MAX_NAME_LENGTH = 253
MAX_LABEL_LENGTH = 63
_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*://")
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
_TLD = re.compile(r"^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$")
# Names reserved for special use (RFC 6761, RFC 6762, RFC 7686, ICANN's .internal): never a company's site.
_SPECIAL_USE_TLDS = frozenset({"localhost", "local", "test", "invalid", "example", "internal", "onion", "arpa", "lan"})
# Unicode dots that IDNA treats as label separators.
_DOTS = re.compile("[\u3002\uff0e\uff61]")


class DomainRejected(ValueError):
    """One input is not a valid public host name; the message says why."""


def normalize_domain(raw: object) -> str:
    """The canonical form of `raw` (see DESIGN.md), or DomainRejected naming the reason."""
    if not isinstance(raw, str):
        raise DomainRejected(f"must be a string, not {type(raw).__name__}")
    host = _extract_host(raw)
    host = _to_ascii(host)
    _check_not_ip(host)
    labels = host.split(".")
    # Strip leading "www." labels, but never down to a bare TLD ("www.com" stays).
    while len(labels) > 2 and labels[0] == "www":
        labels = labels[1:]
    _check_labels(labels)
    return ".".join(labels)


def normalize_domains(values: Iterable[object]) -> list[str]:
    """Normalize every value and remove duplicates, keeping first-seen order.

    Raises InvalidDomains listing every rejected value with its reason: nothing is dropped silently.
    """
    seen: dict[str, None] = {}
    rejections: list[Rejection] = []
    for value in values:
        try:
            seen.setdefault(normalize_domain(value), None)
        except DomainRejected as rejected:
            rejections.append(Rejection(value=value, reason=str(rejected)))
    if rejections:
        raise InvalidDomains(f"{len(rejections)} invalid domain(s)", tuple(rejections))
    return list(seen)


def _extract_host(raw: str) -> str:
    text = raw.strip().lower()
    if not text:
        raise DomainRejected("empty")
    if any(ch.isspace() for ch in text) or "\\" in text:
        raise DomainRejected("contains whitespace or backslashes")
    text = _SCHEME.sub("", text, count=1)
    if text.startswith("//"):
        text = text[2:]
    authority = re.split(r"[/?#]", text, maxsplit=1)[0]
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        raise DomainRejected("is an IP address, not a host name")
    if host.count(":") > 1:
        raise DomainRejected("is an IP address, not a host name")
    host, colon, port = host.partition(":")
    if colon and port and not (port.isdigit() and 0 < int(port) < 65536):
        raise DomainRejected(f"has an invalid port {port!r}")
    host = _DOTS.sub(".", host)
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]
    if not host:
        raise DomainRejected("has no host name")
    return host


def _to_ascii(host: str) -> str:
    if host.isascii():
        return host
    try:
        # Python's codec implements IDNA 2003 (nameprep + punycode) per label.
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError as error:
        raise DomainRejected(f"is not a valid internationalized name ({error})") from None


def _check_not_ip(host: str) -> None:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return
    raise DomainRejected("is an IP address, not a host name")


def _check_labels(labels: list[str]) -> None:
    name = ".".join(labels)
    if len(name) > MAX_NAME_LENGTH:
        raise DomainRejected(f"is longer than {MAX_NAME_LENGTH} characters")
    if len(labels) < 2:
        raise DomainRejected("is a single label, not a public host name")
    for label in labels:
        if not label:
            raise DomainRejected("has an empty label")
        if len(label) > MAX_LABEL_LENGTH:
            raise DomainRejected(f"has a label longer than {MAX_LABEL_LENGTH} characters")
        if not _LABEL.match(label):
            raise DomainRejected(f"label {label!r} has characters other than letters, digits and inner hyphens")
        if label.startswith("xn--"):
            _check_punycode(label)
    tld = labels[-1]
    if not _TLD.match(tld):
        raise DomainRejected(f"top-level label {tld!r} is not a valid top-level domain")
    if tld in _SPECIAL_USE_TLDS:
        raise DomainRejected(f"top-level domain {tld!r} is reserved for special use")


def _check_punycode(label: str) -> None:
    try:
        decoded = label.encode("ascii").decode("idna")
        if decoded.encode("idna").decode("ascii") != label:
            raise UnicodeError("not in canonical form")
    except UnicodeError:
        raise DomainRejected(f"label {label!r} is not valid punycode") from None
