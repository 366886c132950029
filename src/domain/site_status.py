"""A domain's status from one cheap look: live, no DNS, unreachable, parked, blocked or redirected
(or unknown, when the DNS lookup itself failed and nothing was learned).

The pre-check of issue 13: before paying the LLM for a domain, DNS and the start of the homepage
say whether a company could be answering there at all. `site_status` is a pure function of the
facts observed (site_facts.py) and the signatures (site_signatures.py); it never raises and
reads a bounded amount of any page, so any server's answer gives exactly one status.

Precedence, first match wins (each step is a function below, in `_STEPS`):

1. no_dns       the domain (and www., when looked up) has no address: NXDOMAIN or no A/AAAA.
2. parked       by DNS: a parking service's name servers, CNAME target or address. Before
                "unreachable" on purpose: a parked domain whose parking server did not answer us
                is still parked, and says more to the user than a timeout.
3. unknown      a DNS lookup (of the name or of www.) failed (SERVFAIL, REFUSED, timeout) and
                nothing answered: that says more about the resolver (overloaded,
                misconfigured) than about the domain, so nothing is concluded and the domain is
                not ended.
   unreachable  no response: refused, TLS failure, timeout, redirect loop, forbidden address.
4. blocked      a bot wall or challenge page (by its signature).
5. parked       by the page: a parking page, a for-sale notice, or a redirect that lands on
                a parking service's host.
6. redirected   the final URL is on another registrable domain (the target is recorded).
7. blocked      a bare refusal: HTTP 401, 403 or 429 without a known wall's signature.
8. unreachable  the server is down behind its proxy: HTTP 502, 503, 504, or 520-530.
9. live         anything else that answered.

Walls come before parking pages, so a challenge in front of a parked page reads "blocked", and
both before "redirected", so a redirect to a marketplace reads "parked", not "redirected".
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from firmsift.domain.excerpts import excerpt
from firmsift.domain.site_facts import DnsFacts, DnsOutcome, HttpFacts, HttpFailure, SiteFacts
from firmsift.domain.site_signatures import (
    PageView,
    ParkingInfrastructure,
    ParkingKind,
    Signatures,
    address_in,
    host_under,
    normalized_host,
)

REASON_CHARS = 200
REFUSING_STATUSES = frozenset({401, 403, 429})
DOWN_STATUSES = frozenset({502, 503, 504, *range(520, 531)})


class SiteStatus(str, enum.Enum):
    LIVE = "live"
    NO_DNS = "no_dns"
    UNREACHABLE = "unreachable"
    PARKED = "parked"
    BLOCKED = "blocked"
    REDIRECTED = "redirected"
    UNKNOWN = "unknown"  # the DNS lookup failed: nothing learned, the domain goes on as if unchecked


@dataclass(frozen=True)
class SiteVerdict:
    """The status, a one-line reason a user reads, and for `redirected` the target's registrable
    domain (None for every other status)."""

    status: SiteStatus
    reason: str
    redirected_to: str | None = None


def site_status(facts: SiteFacts, signatures: Signatures) -> SiteVerdict:
    """Exactly one verdict for `facts`, following the precedence in this module's docstring."""
    for step in _STEPS:
        verdict = step(facts, signatures)
        if verdict is not None:
            return _bounded(verdict)
    return _bounded(_live(facts))


Step = Callable[[SiteFacts, Signatures], "SiteVerdict | None"]


def _no_dns(facts: SiteFacts, _: Signatures) -> SiteVerdict | None:
    if not facts.dns.outcome.has_no_address:
        return None
    if facts.www_dns is not None and not facts.www_dns.outcome.has_no_address:
        return None
    said = "does not exist (NXDOMAIN)" if facts.dns.outcome is DnsOutcome.NXDOMAIN else "has no address"
    also = " (nor does www.)" if facts.www_dns is not None else ""
    return SiteVerdict(SiteStatus.NO_DNS, f"no DNS: the domain {said}{also}")


def _parked_by_dns(facts: SiteFacts, signatures: Signatures) -> SiteVerdict | None:
    site = _site_dns(facts)
    for service in signatures.parking_infrastructure:
        for server in facts.dns.name_servers:
            if host_under(server, service.hosts):
                return _parked(service, f"name server {normalized_host(server)}")
        for name in site.cname_chain:
            if host_under(name, service.hosts):
                return _parked(service, f"CNAME to {normalized_host(name)}")
        for address in site.addresses:
            if address_in(address, service.networks):
                return _parked(service, f"address {address.strip()}")
    return None


def _unreachable(facts: SiteFacts, _: Signatures) -> SiteVerdict | None:
    http = facts.http
    if http is not None and http.failure is None and http.status is not None:
        return None
    if http is not None and http.failure is not None:
        return SiteVerdict(SiteStatus.UNREACHABLE, f"unreachable: {_failure_words(http)}")
    for name, dns in (("its", facts.dns), ("www.'s", facts.www_dns)):
        # No fetch was made for want of an address, and a look-up said nothing: the name may
        # well exist (the domain NXDOMAIN and www. timed out is a resolver in trouble, not a dead site).
        if dns is not None and dns.outcome in (DnsOutcome.FAILED, DnsOutcome.TIMEOUT):
            words = "timed out" if dns.outcome is DnsOutcome.TIMEOUT else "failed"
            detail = f" ({dns.detail})" if dns.detail else ""
            return SiteVerdict(SiteStatus.UNKNOWN, f"unknown: {name} DNS lookup {words}{detail}")
    return SiteVerdict(SiteStatus.UNREACHABLE, "unreachable: the homepage gave no response")


def _blocked_by_wall(facts: SiteFacts, signatures: Signatures) -> SiteVerdict | None:
    page = _page(facts)
    for wall in signatures.walls:
        if wall.markers.matches(page):
            return SiteVerdict(SiteStatus.BLOCKED, f"blocked by {_article(wall.service)} {wall.service} {wall.what}")
    return None


def _parked_by_page(facts: SiteFacts, signatures: Signatures) -> SiteVerdict | None:
    http = _response(facts)
    landed = _host_of(http.final_url)
    if landed:
        for service in signatures.parking_infrastructure:
            if host_under(landed, service.landing_hosts):
                return _parked(service, f"redirects to {landed}")
    page = _page(facts)
    for parking in signatures.parking_pages:
        if parking.markers.matches(page):
            named = f" ({parking.service})" if parking.service else ""
            return SiteVerdict(SiteStatus.PARKED, f"parked {parking.kind.phrase}{named}")
    return None


def _redirected(facts: SiteFacts, _: Signatures) -> SiteVerdict | None:
    target = _response(facts).final_registrable_domain
    own = normalized_host(facts.registrable_domain or facts.domain)
    if not target or normalized_host(target) == own:
        return None
    target = normalized_host(target)
    return SiteVerdict(SiteStatus.REDIRECTED, f"redirects to another site: {target}", redirected_to=target)


def _refused(facts: SiteFacts, _: Signatures) -> SiteVerdict | None:
    status = _response(facts).status
    if status in REFUSING_STATUSES:
        return SiteVerdict(SiteStatus.BLOCKED, f"blocked: the homepage refused us with HTTP {status}")
    return None


def _down(facts: SiteFacts, _: Signatures) -> SiteVerdict | None:
    status = _response(facts).status
    if status in DOWN_STATUSES:
        return SiteVerdict(SiteStatus.UNREACHABLE, f"unreachable: the site's server is down (HTTP {status})")
    return None


def _live(facts: SiteFacts) -> SiteVerdict:
    status = facts.http.status if facts.http is not None else None
    return SiteVerdict(SiteStatus.LIVE, f"live: the homepage answered HTTP {status}")


_STEPS: tuple[Step, ...] = (
    _no_dns,
    _parked_by_dns,
    _unreachable,
    _blocked_by_wall,
    _parked_by_page,
    _redirected,
    _refused,
    _down,
)


def _site_dns(facts: SiteFacts) -> DnsFacts:
    """Where the homepage lives: the domain itself, or www. when only www. has an address."""
    if facts.dns.addresses or facts.www_dns is None or not facts.www_dns.addresses:
        return facts.dns
    return facts.www_dns


def _response(facts: SiteFacts) -> HttpFacts:
    """The response (past _unreachable there always is one; an empty one keeps the steps total)."""
    return facts.http if facts.http is not None else HttpFacts()


def _page(facts: SiteFacts) -> PageView:
    return PageView.of(facts.domain, _response(facts))


def _parked(service: ParkingInfrastructure, evidence: str) -> SiteVerdict:
    return SiteVerdict(SiteStatus.PARKED, f"parked {service.kind.phrase} ({service.service}; {evidence})")


_FAILURE_WORDS = {
    HttpFailure.REFUSED: "the connection was refused",
    HttpFailure.TLS: "the TLS handshake failed",
    HttpFailure.TIMEOUT: "the homepage timed out",
    HttpFailure.REDIRECTS: "its redirects cannot be followed",
    HttpFailure.FORBIDDEN_ADDRESS: "it resolves only to addresses we may not connect to",
    HttpFailure.OTHER: "the homepage could not be fetched",
}


def _failure_words(http: HttpFacts) -> str:
    words = _FAILURE_WORDS.get(http.failure or HttpFailure.OTHER, _FAILURE_WORDS[HttpFailure.OTHER])
    return f"{words} ({http.failure_detail})" if http.failure_detail else words


def _host_of(url: str) -> str:
    try:
        return normalized_host(urlsplit(url[:2_000]).hostname or "")
    except ValueError:
        return ""


def _article(word: str) -> str:
    return "an" if word[:1].lower() in ("a", "e", "i", "o", "u") else "a"


def bounded_reason(reason: str) -> str:
    """A verdict's reason as a user reads it: at most REASON_CHARS characters."""
    return excerpt(reason, REASON_CHARS)


def _bounded(verdict: SiteVerdict) -> SiteVerdict:
    reason = bounded_reason(verdict.reason)
    return verdict if reason == verdict.reason else SiteVerdict(verdict.status, reason, verdict.redirected_to)


__all__ = ["ParkingKind", "SiteStatus", "SiteVerdict", "bounded_reason", "site_status"]
