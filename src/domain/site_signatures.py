"""Signatures of parking services and bot walls, as the pre-check matches them.

The signatures themselves are data (src/signatures/*.toml, each entry with its source), read by
an adapter (adapters/files/site_signatures.py) into these types. Matching is plain substring and
suffix comparison on bounded, normalised text: no regular expression ever runs on a page.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from firmsift.domain.site_facts import PAGE_CHARS, TITLE_CHARS, HttpFacts, page_title, unescape

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DOMAIN_PLACEHOLDER = "{domain}"
_HEADERS_READ = 200  # headers past this many are not looked at
_HEADER_VALUE_CHARS = 2_000


class ParkingKind(str, enum.Enum):
    """Who parks the domain, as a user reads it in the reason."""

    MARKETPLACE = "marketplace"
    PARKING = "parking"
    REGISTRAR = "registrar"
    FOR_SALE = "for_sale"

    @property
    def phrase(self) -> str:
        return {
            ParkingKind.MARKETPLACE: "at a domain marketplace",
            ParkingKind.PARKING: "with a parking service",
            ParkingKind.REGISTRAR: "on a registrar's placeholder page",
            ParkingKind.FOR_SALE: "with a for-sale notice",
        }[self]


@dataclass(frozen=True)
class PageMarkers:
    """What a response must show, every listed condition at once.

    `statuses`: the HTTP status is one of these (empty: any). `headers`: each (name, value) pair
    names a header that is present and whose value contains `value` ("" : present at all).
    `title_any`: the page title contains one of these (empty: no condition). `text_all`: the page
    contains every one of these. Comparison ignores case, HTML character references and runs of
    whitespace; `{domain}` in a title or text marker stands for the domain being checked.
    """

    statuses: frozenset[int] = frozenset()
    headers: tuple[tuple[str, str], ...] = ()
    title_any: tuple[str, ...] = ()
    text_all: tuple[str, ...] = ()

    def matches(self, page: PageView) -> bool:
        if self.statuses and page.status not in self.statuses:
            return False
        if not all(page.has_header(name, value) for name, value in self.headers):
            return False
        if self.title_any and not any(page.title_has(marker) for marker in self.title_any):
            return False
        return all(page.text_has(marker) for marker in self.text_all)


@dataclass(frozen=True)
class ParkingInfrastructure:
    """A parking service known by its DNS: name servers or CNAME targets under `hosts`, addresses
    in `networks`, or a redirect that lands on a host under `landing_hosts`."""

    service: str
    kind: ParkingKind
    source: str
    hosts: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()
    landing_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ParkingPage:
    """A parking or for-sale page known by what it shows. `service` may be "" (a generic notice)."""

    service: str
    kind: ParkingKind
    markers: PageMarkers
    source: str


@dataclass(frozen=True)
class Wall:
    """A bot wall or challenge page: `what` it is ("challenge", "captcha", "block page") and
    whose (`service`)."""

    service: str
    what: str
    markers: PageMarkers
    source: str


@dataclass(frozen=True)
class Signatures:
    parking_infrastructure: tuple[ParkingInfrastructure, ...] = ()
    parking_pages: tuple[ParkingPage, ...] = ()
    walls: tuple[Wall, ...] = ()


def normalized(text: str) -> str:
    """Lowercase, HTML character references decoded, whitespace runs made one space."""
    return " ".join(unescape(text).lower().split())


def normalized_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def host_under(host: str, suffixes: Iterable[str]) -> str | None:
    """The first of `suffixes` that `host` is, or is a name under; None when none."""
    name = normalized_host(host)
    for suffix in suffixes:
        if name == suffix or name.endswith("." + suffix):
            return suffix
    return None


def address_in(address: str, networks: Sequence[IPNetwork]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip.version == network.version and ip in network for network in networks)


@dataclass(frozen=True)
class PageView:
    """A response as the markers read it: bounded, normalised once."""

    domain: str
    status: int | None
    title: str
    text: str
    headers: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, domain: str, http: HttpFacts) -> PageView:
        headers: dict[str, list[str]] = {}
        for name, value in http.headers[:_HEADERS_READ]:
            headers.setdefault(str(name).strip().lower(), []).append(str(value)[:_HEADER_VALUE_CHARS].lower())
        body = http.body[:PAGE_CHARS]
        title = http.title[:TITLE_CHARS] if http.title is not None else page_title(body)
        return cls(
            domain=normalized_host(domain),
            status=http.status,
            title=normalized(title),
            text=normalized(body),
            headers={name: tuple(values) for name, values in headers.items()},
        )

    def has_header(self, name: str, value: str) -> bool:
        values = self.headers.get(name.lower())
        if values is None:
            return False
        wanted = value.lower()
        return any(wanted in received for received in values)

    def title_has(self, marker: str) -> bool:
        return self._marker(marker) in self.title

    def text_has(self, marker: str) -> bool:
        return self._marker(marker) in self.text

    def _marker(self, marker: str) -> str:
        return normalized(marker).replace(DOMAIN_PLACEHOLDER, self.domain)
