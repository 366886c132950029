"""The pre-check rule: its precedence, step by step, and that any input gives exactly one status,
without an exception, in bounded time."""

from __future__ import annotations

import ipaddress
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.domain.site_facts import DnsFacts, DnsOutcome, HttpFacts, HttpFailure, SiteFacts, page_title, unescape
from firmsift.domain.site_signatures import (
    PageMarkers,
    ParkingInfrastructure,
    ParkingKind,
    ParkingPage,
    Signatures,
    Wall,
)
from firmsift.domain.site_status import REASON_CHARS, SiteStatus, site_status

ANSWERED = DnsFacts(DnsOutcome.ANSWERED, addresses=("198.51.100.7",))
PARKING = ParkingInfrastructure(
    service="ParkCo", kind=ParkingKind.PARKING, source="test",
    hosts=("parkco.example",), networks=(ipaddress.ip_network("192.0.2.0/24"),), landing_hosts=("parkco.example",),
)
SIGNATURES = Signatures(
    parking_infrastructure=(PARKING,),
    parking_pages=(ParkingPage("ParkCo", ParkingKind.MARKETPLACE, PageMarkers(text_all=("parked-by-parkco",)), "test"),),
    walls=(Wall("WallCo", "challenge", PageMarkers(statuses=frozenset({403, 503}), text_all=("wallco-check",)), "test"),),
)


def facts(*, dns: DnsFacts = ANSWERED, www: DnsFacts | None = None, status: int | None = 200,
          failure: HttpFailure | None = None, body: str = "<title>Acme</title>", target: str | None = "acme.example",
          final_url: str = "https://acme.example/", http: bool = True) -> SiteFacts:
    page = HttpFacts(status=None if failure else status, failure=failure, body=body, final_url=final_url,
                     final_registrable_domain=target)
    return SiteFacts(domain="acme.example", dns=dns, www_dns=www, http=page if http else None)


def status_of(site: SiteFacts) -> SiteStatus:
    return site_status(site, SIGNATURES).status


# ---- precedence, each step against the one after it ------------------------------------------

def test_no_dns_wins_over_parking_name_servers() -> None:
    dns = DnsFacts(DnsOutcome.NXDOMAIN, name_servers=("ns1.parkco.example",))
    assert status_of(facts(dns=dns, http=False)) is SiteStatus.NO_DNS


def test_no_address_is_no_dns_only_when_www_has_none_either() -> None:
    bare = DnsFacts(DnsOutcome.NO_ADDRESS)
    assert status_of(facts(dns=bare, www=DnsFacts(DnsOutcome.NXDOMAIN), http=False)) is SiteStatus.NO_DNS
    assert status_of(facts(dns=bare, www=ANSWERED)) is SiteStatus.LIVE


def test_parked_by_dns_wins_over_unreachable() -> None:
    for dns in (DnsFacts(DnsOutcome.ANSWERED, addresses=("192.0.2.9",)),
                DnsFacts(DnsOutcome.ANSWERED, addresses=("198.51.100.7",), name_servers=("NS1.ParkCo.Example.",)),
                DnsFacts(DnsOutcome.ANSWERED, addresses=("198.51.100.7",), cname_chain=("lander.parkco.example",))):
        verdict = site_status(facts(dns=dns, failure=HttpFailure.TIMEOUT), SIGNATURES)
        assert verdict.status is SiteStatus.PARKED
        assert verdict.reason.startswith("parked with a parking service (ParkCo; ")


def test_a_lookalike_name_server_is_not_the_parking_service() -> None:
    dns = DnsFacts(DnsOutcome.ANSWERED, addresses=("198.51.100.7",), name_servers=("ns1.notparkco.example",))
    assert status_of(facts(dns=dns)) is SiteStatus.LIVE


def test_unreachable_wins_over_everything_the_page_would_say() -> None:
    for failure in HttpFailure:
        verdict = site_status(facts(failure=failure, body="wallco-check parked-by-parkco"), SIGNATURES)
        assert verdict.status is SiteStatus.UNREACHABLE
        assert verdict.reason.startswith("unreachable: ")


def test_a_dns_failure_without_a_response_is_unknown_not_unreachable() -> None:
    # An overloaded or broken resolver says nothing about the domain: nothing is concluded.
    failed = DnsFacts(DnsOutcome.FAILED, detail="SERVFAIL")
    assert site_status(facts(dns=failed, http=False), SIGNATURES).reason == "unknown: its DNS lookup failed (SERVFAIL)"
    assert status_of(facts(dns=DnsFacts(DnsOutcome.TIMEOUT), http=False)) is SiteStatus.UNKNOWN
    assert status_of(facts(dns=failed)) is SiteStatus.LIVE


def test_a_name_without_address_and_a_www_lookup_that_said_nothing_is_unknown_not_unreachable() -> None:
    # Seen with a resolver in trouble (215 names asked at once): NXDOMAIN for the name and a
    # timeout for www. left nothing to connect to, and 3 of them were ended as unreachable.
    timed_out = DnsFacts(DnsOutcome.TIMEOUT, detail="no answer within 4s")
    verdict = site_status(facts(dns=DnsFacts(DnsOutcome.NXDOMAIN), www=timed_out, http=False), SIGNATURES)
    assert verdict.status is SiteStatus.UNKNOWN
    assert verdict.reason == "unknown: www.'s DNS lookup timed out (no answer within 4s)"
    both_gone = facts(dns=DnsFacts(DnsOutcome.NXDOMAIN), www=DnsFacts(DnsOutcome.NXDOMAIN), http=False)
    assert status_of(both_gone) is SiteStatus.NO_DNS


def test_a_wall_wins_over_a_parking_page_and_a_redirect() -> None:
    site = facts(status=403, body="wallco-check parked-by-parkco", target="elsewhere.example")
    verdict = site_status(site, SIGNATURES)
    assert (verdict.status, verdict.reason, verdict.redirected_to) == (
        SiteStatus.BLOCKED, "blocked by a WallCo challenge", None)


def test_a_wall_marker_with_another_status_is_no_wall() -> None:
    assert status_of(facts(status=200, body="wallco-check")) is SiteStatus.LIVE


def test_a_parking_page_and_a_parking_landing_host_win_over_a_redirect() -> None:
    assert status_of(facts(body="parked-by-parkco", target="elsewhere.example")) is SiteStatus.PARKED
    landed = site_status(facts(final_url="https://www.parkco.example/buy?d=acme.example", target="parkco.example"),
                         SIGNATURES)
    assert (landed.status, landed.reason) == (
        SiteStatus.PARKED, "parked with a parking service (ParkCo; redirects to www.parkco.example)")


def test_a_redirect_to_another_site_wins_over_a_refusal_there() -> None:
    verdict = site_status(facts(status=403, body="", target="Parent.Example."), SIGNATURES)
    assert (verdict.status, verdict.redirected_to) == (SiteStatus.REDIRECTED, "parent.example")


def test_a_redirect_within_the_site_is_no_redirect() -> None:
    assert status_of(facts(target="acme.example", final_url="https://www.acme.example/en/")) is SiteStatus.LIVE
    assert status_of(facts(target=None)) is SiteStatus.LIVE


def test_bare_refusals_are_blocked_and_proxy_errors_unreachable_the_rest_live() -> None:
    assert [status_of(facts(status=code, body="")) for code in (401, 403, 429)] == [SiteStatus.BLOCKED] * 3
    down = (502, 503, 504, 520, 522, 530)
    assert [status_of(facts(status=code, body="")) for code in down] == [SiteStatus.UNREACHABLE] * len(down)
    assert [status_of(facts(status=code, body="")) for code in (200, 204, 404, 410, 500, 531)] == [SiteStatus.LIVE] * 6


def test_a_challenge_served_with_503_is_blocked_not_unreachable() -> None:
    assert status_of(facts(status=503, body="wallco-check")) is SiteStatus.BLOCKED


def test_markers_ignore_case_character_references_and_whitespace_and_know_the_domain() -> None:
    signatures = Signatures(parking_pages=(
        ParkingPage("", ParkingKind.FOR_SALE, PageMarkers(text_all=("{domain} is for   sale",)), "test"),))
    for_sale = facts(body="<h1>ACME.example&#32;is\nfor sale</h1>")
    assert site_status(for_sale, signatures).reason == "parked with a for-sale notice"
    assert site_status(facts(body="other.example is for sale"), signatures).status is SiteStatus.LIVE


def test_headers_match_by_name_in_any_case_and_by_contained_value() -> None:
    signatures = Signatures(walls=(Wall("HeadCo", "challenge", PageMarkers(headers=(("x-mitigated", "challenge"),)), "t"),))
    page = HttpFacts(status=200, headers=(("X-Mitigated", "Managed-Challenge"),))
    other = HttpFacts(status=200, headers=(("X-Mitigated", "none"),))
    assert site_status(SiteFacts("acme.example", ANSWERED, http=page), signatures).status is SiteStatus.BLOCKED
    assert site_status(SiteFacts("acme.example", ANSWERED, http=other), signatures).status is SiteStatus.LIVE


def test_page_title_reads_the_first_title_within_limits() -> None:
    assert page_title("<html><TITLE lang=en>\n Just a &amp; moment... </title>") == "Just a & moment..."
    assert page_title("no title here") == ""
    assert page_title("<title>never closed " + "x" * 10_000) == ("never closed " + "x" * 300)[:300]


# ---- any input: exactly one status, no exception, bounded time -------------------------------

REAL = load_signatures()
MARKERS = sorted({m for w in REAL.walls for m in w.markers.text_all + w.markers.title_any}
                 | {m for p in REAL.parking_pages for m in p.markers.text_all})
pieces = st.one_of(st.text(max_size=60), st.sampled_from(MARKERS), st.sampled_from(["<title>", "</title>", "&", "&#", "{domain}"]))
bodies = st.lists(pieces, max_size=20).map("".join)
hosts = st.one_of(st.text(max_size=40), st.sampled_from(["ns1.sedoparking.com.", "parkingpage.namecheap.com", "x.bodis.com"]))
addresses = st.one_of(st.text(max_size=40), st.ip_addresses().map(str), st.sampled_from(["199.59.243.228", "91.195.240.94"]))
dns_facts = st.builds(DnsFacts, outcome=st.sampled_from(DnsOutcome), addresses=st.lists(addresses, max_size=4).map(tuple),
                      cname_chain=st.lists(hosts, max_size=3).map(tuple), name_servers=st.lists(hosts, max_size=3).map(tuple),
                      detail=st.text(max_size=300))
headers = st.lists(st.tuples(st.one_of(st.text(max_size=20), st.sampled_from(["cf-mitigated", "x-datadome", "X-Amzn-Waf-Action"])),
                             st.one_of(st.text(max_size=40), st.sampled_from(["challenge", "captcha", "protected"]))),
                   max_size=6).map(tuple)
http_facts = st.builds(
    HttpFacts, status=st.one_of(st.none(), st.integers(-10, 1000), st.sampled_from([200, 403, 429, 503, 522])),
    failure=st.one_of(st.none(), st.sampled_from(HttpFailure)), failure_detail=st.text(max_size=300), headers=headers,
    final_url=st.one_of(st.text(max_size=80), st.sampled_from(["https://[::1/", "https://www.afternic.com/x", "http://a.b:99999/"])),
    final_registrable_domain=st.one_of(st.none(), st.text(max_size=30)), title=st.one_of(st.none(), st.text(max_size=100)),
    body=bodies,
)
sites = st.builds(SiteFacts, domain=st.text(max_size=40), dns=dns_facts, www_dns=st.one_of(st.none(), dns_facts),
                  http=st.one_of(st.none(), http_facts), registrable_domain=st.one_of(st.none(), st.text(max_size=30)))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(sites)
def test_any_facts_give_exactly_one_status_and_a_bounded_reason(site: SiteFacts) -> None:
    verdict = site_status(site, REAL)

    assert isinstance(verdict.status, SiteStatus)
    assert 0 < len(verdict.reason) <= REASON_CHARS and "\n" not in verdict.reason
    assert (verdict.redirected_to is not None) == (verdict.status is SiteStatus.REDIRECTED)


@settings(max_examples=50)
@given(st.binary(max_size=4_000))
def test_any_bytes_as_a_page_give_a_status(raw: bytes) -> None:
    page = HttpFacts(status=403, body=raw.decode("utf-8", errors="replace"), headers=(("cf-mitigated", raw.hex()[:40]),))
    assert isinstance(site_status(SiteFacts("acme.example", ANSWERED, http=page), REAL).status, SiteStatus)


# CPU seconds, not wall-clock ones: a busy machine cannot stretch them. Each page takes well under
# a tenth of a second alone; a blow-up (quadratic work on megabytes) takes minutes.
CPU_SECONDS = 3.0


def test_huge_hostile_pages_take_bounded_time() -> None:
    hostile = [
        "&" * 5_000_000,
        "<title" * 1_000_000,
        "&#" + "9" * 5_000_000,
        "_cf_chl_op" * 500_000,
        " \t\n" * 2_000_000,
    ]
    for body in hostile:
        page = HttpFacts(status=403, body=body, headers=tuple(("x-h", "v" * 10_000) for _ in range(5_000)),
                         final_url="https://" + "a." * 500_000)
        started = time.process_time()
        verdict = site_status(SiteFacts("acme.example", ANSWERED, http=page), REAL)
        assert time.process_time() - started < CPU_SECONDS
        assert isinstance(verdict.status, SiteStatus)


def test_character_references_decode_within_limits() -> None:
    assert unescape("Reference&#32;&#35;18&#46;5 &amp; errors&#x2e;edgesuite&#46;net") == "Reference #18.5 & errors.edgesuite.net"
    assert unescape("&#" + "9" * 50 + ";") == "&#" + "9" * 50 + ";"  # too long to be a reference
    assert unescape("&#99999999;&#0;&nosuch; & &amp") == "\ufffd\ufffd&nosuch; & &amp"
