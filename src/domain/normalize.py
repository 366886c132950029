"""Domain-name normalization and validation: one canonical ASCII host name per company site."""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable

import idna

from firmsift.domain.errors import InvalidDomains, Rejection
from firmsift.domain.punycode import encode_within

MAX_NAME_LENGTH = 253
MAX_LABEL_LENGTH = 63
_ACE_PREFIX = "xn--"
# Punycode spends at least one character per non-ASCII code point, so an internationalized label
# of more code points than this cannot fit in 63 octets once encoded: refused before encoding.
MAX_UNICODE_LABEL = MAX_LABEL_LENGTH - len(_ACE_PREFIX)
# NFC composes at most four code points into one character (the longest canonical decomposition),
# and every other character maps to at least one: a label or a name written with more than four code
# points per allowed octet cannot be valid. Refused before any mapping, so the work per name is
# bounded whatever its length. (Characters UTS #46 ignores, such as soft hyphens, count too.)
MAX_WRITTEN_LABEL = 4 * MAX_LABEL_LENGTH
MAX_WRITTEN_NAME = 4 * MAX_NAME_LENGTH
_SCHEME = re.compile(r"^[a-z][a-z0-9+.\-]*://", re.IGNORECASE)
_SPACE_OR_BACKSLASH = re.compile(r"[\s\\]")
# ASCII digits only ("²" and "①" are digits to str.isdigit, not to int()), and few enough for int().
_PORT = re.compile(r"0*[0-9]{1,5}")
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
_TLD = re.compile(r"^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$")
# Names reserved for special use (RFC 6761, RFC 6762, RFC 7686, ICANN's .internal): never a company's site.
_SPECIAL_USE_TLDS = frozenset({"localhost", "local", "test", "invalid", "example", "internal", "onion", "arpa", "lan"})
# Unicode dots that IDNA treats as label separators.
_DOTS = re.compile("[\u3002\uff0e\uff61]")
# A plain name (the common case, read in microseconds): an optional http(s) scheme, lowercase LDH
# labels, an alphabetic top-level label, then at most a path, query or fragment of visible ASCII.
_PLAIN = re.compile(r"(?:https?://)?((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})(?:[/?#][!-\[\]-~]*)?")


class DomainRejected(ValueError):
    """One input is not a valid public host name; the message says why."""


def normalize_domain(raw: object) -> str:
    """The canonical form of `raw` (see DESIGN.md), or DomainRejected naming the reason."""
    plain = _plain_name(raw) if isinstance(raw, str) else None
    return plain if plain is not None else _normalize_in_full(raw)


def _plain_name(raw: str) -> str | None:
    """The canonical form of a plain name (_PLAIN), or None for any other value (and for a long
    name, an xn-- label or a reserved top-level domain, which the full path rejects with its
    reason): with no whitespace, userinfo, port, trailing dot, upper case, IP address or
    non-ASCII to handle, the full path would only strip the leading www labels."""
    match = _PLAIN.fullmatch(raw)
    if match is None:
        return None
    host = match[1]
    labels = host.split(".")
    if len(host) > MAX_NAME_LENGTH or "xn--" in host or labels[-1] in _SPECIAL_USE_TLDS:
        return None
    return ".".join(_without_www(labels))


def _normalize_in_full(raw: object) -> str:
    if not isinstance(raw, str):
        raise DomainRejected(f"must be a string, not {type(raw).__name__}")
    host = _to_ascii(_extract_host(raw))
    # The whole name is bounded before anything walks its labels: "www." * 16,000 + "com" must
    # be refused at once, not stripped (quadratically) down to "www.com".
    if len(host) > MAX_NAME_LENGTH:
        raise DomainRejected(f"is longer than {MAX_NAME_LENGTH} characters")
    _check_not_ip(host)
    labels = _without_www(host.split("."))
    _check_labels(labels)
    return ".".join(labels)


def _without_www(labels: list[str]) -> list[str]:
    """Leading "www" labels stripped, but never down to a bare TLD ("www.com" stays)."""
    first = 0
    while len(labels) - first > 2 and labels[first] == "www":
        first += 1
    return labels[first:]


class DomainList:
    """Domains normalized one value at a time: the unique ones in first-seen order, and every
    rejected value with its reason. A value seen before costs a dictionary lookup."""

    def __init__(self) -> None:
        self._unique: dict[str, None] = {}
        self._rejections: list[Rejection] = []
        self._outcomes: dict[str, str | DomainRejected] = {}

    def add(self, value: object) -> None:
        outcome = self._outcomes.get(value) if isinstance(value, str) else None
        if outcome is None:
            try:
                outcome = normalize_domain(value)
            except DomainRejected as rejected:
                outcome = rejected
            if isinstance(value, str):
                self._outcomes[value] = outcome
        if isinstance(outcome, DomainRejected):
            self._rejections.append(Rejection(value=value, reason=str(outcome)))
        else:
            self._unique.setdefault(outcome, None)

    def costly(self, value: object) -> bool:
        """Whether adding `value` means UTS #46 mapping and punycode (~0.3 ms, 1 ms at worst),
        rather than a lookup or the ASCII checks (microseconds)."""
        return isinstance(value, str) and not value.isascii() and value not in self._outcomes

    def unique(self) -> list[str]:
        """The unique domains, or InvalidDomains listing every rejected value: nothing is dropped silently."""
        if self._rejections:
            raise InvalidDomains(f"{len(self._rejections)} invalid domain(s)", tuple(self._rejections))
        return list(self._unique)


def normalize_domains(values: Iterable[object]) -> list[str]:
    """Normalize every value and remove duplicates, keeping first-seen order.

    Raises InvalidDomains listing every rejected value with its reason: nothing is dropped silently.
    """
    domains = DomainList()
    for value in values:
        domains.add(value)
    return domains.unique()


def _extract_host(raw: str) -> str:
    text = raw.strip()
    if not text:
        raise DomainRejected("empty")
    if _SPACE_OR_BACKSLASH.search(text):
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
    if colon and port and not (_PORT.fullmatch(port) and 0 < int(port) < 65536):
        raise DomainRejected(f"has an invalid port {_shown(port)}")
    host = _DOTS.sub(".", host)
    if host.endswith(".") and not host.endswith(".."):
        host = host[:-1]
    if not host:
        raise DomainRejected("has no host name")
    return host


def _to_ascii(host: str) -> str:
    """The host in ASCII: UTS #46 mapping (IDNA 2008, nontransitional: "ß" stays "ß") and punycode,
    label by label, each label bounded before it is mapped and again before it is encoded."""
    if host.isascii():
        return host.lower()
    if len(host) > MAX_WRITTEN_NAME:
        raise DomainRejected(f"is longer than {MAX_NAME_LENGTH} characters")
    encoded: list[str] = []
    least = -1  # the fewest octets the name can take: its labels and the dots between them
    for label in host.split("."):
        ascii_label = _label_to_ascii(label)
        least += 1 + len(ascii_label)
        if least > MAX_NAME_LENGTH:
            raise DomainRejected(f"is longer than {MAX_NAME_LENGTH} characters")
        encoded.append(ascii_label)
    return ".".join(encoded)


def _label_to_ascii(label: str) -> str:
    if label.isascii():
        return label.lower()  # the only UTS #46 mapping of ASCII; checked with every label later
    if len(label) > MAX_WRITTEN_LABEL:
        raise DomainRejected(f"has a label longer than {MAX_LABEL_LENGTH} characters")
    try:
        mapped = idna.uts46_remap(label, std3_rules=True)
    except idna.IDNAError as error:
        raise DomainRejected(f"is not a valid internationalized name ({_cut(str(error))})") from None
    if mapped.isascii():
        return mapped  # e.g. fullwidth letters
    if "." in mapped:
        raise DomainRejected("has a character that maps to a dot")
    if len(mapped) > MAX_UNICODE_LABEL:
        raise DomainRejected(f"has a label longer than {MAX_LABEL_LENGTH} characters once encoded")
    encoded = encode_within(mapped, MAX_LABEL_LENGTH - len(_ACE_PREFIX))
    if encoded is None:
        raise DomainRejected(f"has a label longer than {MAX_LABEL_LENGTH} characters once encoded")
    try:
        idna.check_label(mapped)  # IDNA 2008: code points, hyphens, joiners, bidi
    except (idna.IDNAError, UnicodeError) as error:
        raise DomainRejected(f"is not a valid internationalized name ({_cut(str(error))})") from None
    return _ACE_PREFIX + encoded


def _shown(text: str) -> str:
    """`text` quoted for a reason, cut to a readable length: a reason never echoes a megabyte."""
    return repr(_cut(text))


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _check_not_ip(host: str) -> None:
    if ":" not in host and not host.replace(".", "").isdigit():
        return  # (the host is ASCII here) only digits and dots, or a colon, can spell an address
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
    """An ACE label must decode to a valid IDNA 2008 label and be that label's own encoding."""
    if not _is_canonical_punycode(label):
        raise DomainRejected(f"label {label!r} is not valid punycode")


# Remembered per label (at most 63 characters here): a list repeats its internationalized names,
# and decoding and encoding one again took about a third of the time to read a 20,000-row messy list.
@functools.lru_cache(maxsize=4096)
def _is_canonical_punycode(label: str) -> bool:
    try:
        return idna.alabel(idna.ulabel(label)).decode("ascii") == label
    except (idna.IDNAError, UnicodeError):
        return False
