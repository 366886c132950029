"""The homepage reader's look for the pre-check, against a loopback web server serving the site
fixtures by host name: each page is read into the status the fixture expects; redirects, slow,
huge and refused sites too; a wall's page is never evidence; a looked-at page is not fetched twice."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.adapters.memory.providers import StaticSearch
from firmsift.adapters.search.homepage import HomepageSearch
from firmsift.domain.errors import ProviderError
from firmsift.domain.site_facts import DnsFacts, DnsOutcome, HttpFailure, SiteFacts
from firmsift.domain.site_status import SiteStatus, SiteVerdict, site_status
from firmsift.services.search_chain import SearchChain
from tests.support.site_fixtures import load
from tests.support.site_server import Page, SiteServer, fixture_page, redirect
from tests.support.processes import refusing_port

pytestmark = pytest.mark.anyio
SIGNATURES = load_signatures()
ANSWERED = DnsFacts(DnsOutcome.ANSWERED, addresses=("203.0.113.5",))

# Every fixture served as the domain's own homepage (the redirecting ones are served below).
SERVED = [
    "blocked_akamai_access_denied", "blocked_anubis", "blocked_aws_waf_captcha", "blocked_bare_403",
    "blocked_cloudflare_attention_required", "blocked_cloudflare_challenge_without_header",
    "blocked_cloudflare_managed_challenge", "blocked_datadome", "blocked_ddos_guard", "blocked_hcaptcha_403",
    "blocked_imperva_incident", "blocked_perimeterx_press_and_hold", "blocked_recaptcha_429", "blocked_sucuri",
    "blocked_turnstile_403", "blocked_turnstile_widget_503", "blocked_vercel_checkpoint",
    "live_article_about_bots", "live_contact_form_with_captchas", "live_for_sale_in_normal_text",
    "live_mentions_cloudflare_and_challenge_platform", "live_not_found_homepage",
    "live_protected_by_datadome_perimeterx_imperva", "live_registrar_homepage",
    "parked_bodis_lander", "parked_buydomains", "parked_dan_com", "parked_for_sale_notice",
    "parked_godaddy_free_parking", "parked_namesilo", "parked_parkingcrew_page", "parked_porkbun",
    "parked_sedo_page", "unreachable_origin_down",
]
HUGE = b"<html><head><title>Big Co</title></head><body>" + b"<p>We make soap.</p>" * 300_000 + \
       b"<p>This domain is for sale! Buy this domain</p></body></html>"


@pytest.fixture(scope="module")
def server() -> Iterator[SiteServer]:
    pages = dict(fixture_page(name) for name in SERVED)
    pages.update({
        "old-brand.example": redirect("http://www.parent-group.example/brands/old-brand"),
        "www.parent-group.example": Page(body=b"<title>Parent Group</title><p>Our brands</p>"),
        "pepper-mill.example": redirect("http://www.afternic.com/forsale/pepper-mill.example"),
        "www.afternic.com": fixture_page("parked_redirect_to_afternic")[1],
        "loop.example": redirect("http://loop.example/again"),
        "slow.example": Page(body=b"<title>Slow</title>", delay=3.0),
        "huge.example": Page(body=HUGE),
        "www-hop.example": redirect("http://www.www-hop.example/"),
        "www.www-hop.example": Page(body=b"<title>Hop Co</title><p>We make jam.</p>"),
    })
    with SiteServer(pages) as running:
        yield running


@contextlib.asynccontextmanager
async def reader(server: SiteServer, *, timeout: float, total_timeout: float) -> AsyncIterator[HomepageSearch]:
    homepage = HomepageSearch(allow_private_addresses=True, pinned=server.pinned(), signatures=SIGNATURES,
                              timeout=timeout, total_timeout=total_timeout)
    try:
        yield homepage
    finally:
        await homepage.aclose()


@pytest.fixture
async def homepage(server: SiteServer) -> AsyncIterator[HomepageSearch]:
    # Room for a loaded machine (the suite keeps both cores busy): a 2 s budget once timed out on a
    # small fixture page. The slow page is read with short limits of its own (hurried_homepage).
    async with reader(server, timeout=10.0, total_timeout=20.0) as homepage:
        yield homepage


@pytest.fixture
async def hurried_homepage(server: SiteServer) -> AsyncIterator[HomepageSearch]:
    """Limits (1 s a read, 2 s in all) that the slow page's 3 s delay overruns."""
    async with reader(server, timeout=1.0, total_timeout=2.0) as homepage:
        yield homepage


async def verdict_of(homepage: HomepageSearch, domain: str) -> SiteVerdict:
    looked = await homepage.look(domain)
    facts = SiteFacts(domain=domain, dns=ANSWERED, http=looked.http, registrable_domain=looked.registrable_domain)
    return site_status(facts, SIGNATURES)


@pytest.mark.parametrize("name", SERVED)
async def test_each_fixture_served_over_http_reads_as_expected(homepage: HomepageSearch, name: str) -> None:
    case = load(name)
    verdict = await verdict_of(homepage, case["domain"])
    assert verdict.status.value == case["expect"]["status"], verdict.reason
    assert case["expect"]["reason_contains"] in verdict.reason


async def test_the_cf_mitigated_header_is_read_from_the_wire(homepage: HomepageSearch) -> None:
    looked = await homepage.look("acme-snacks.com")
    assert ("cf-mitigated", "challenge") in [(n.lower(), v) for n, v in looked.http.headers]
    assert looked.http.status == 403


async def test_a_redirect_to_another_site_records_its_registrable_domain(homepage: HomepageSearch) -> None:
    verdict = await verdict_of(homepage, "old-brand.example")
    assert (verdict.status, verdict.redirected_to) == (SiteStatus.REDIRECTED, "parent-group.example")


async def test_a_redirect_within_the_site_is_live(homepage: HomepageSearch) -> None:
    assert (await verdict_of(homepage, "www-hop.example")).status is SiteStatus.LIVE


async def test_a_redirect_to_a_marketplace_reads_parked(homepage: HomepageSearch) -> None:
    verdict = await verdict_of(homepage, "pepper-mill.example")
    assert verdict.status is SiteStatus.PARKED and "Afternic" in verdict.reason


async def test_a_redirect_loop_is_unreachable(homepage: HomepageSearch) -> None:
    looked = await homepage.look("loop.example")
    assert looked.http.failure is HttpFailure.REDIRECTS
    assert (await verdict_of(homepage, "loop.example")).status is SiteStatus.UNREACHABLE


async def test_a_slow_homepage_is_unreachable_within_the_time_limit(hurried_homepage: HomepageSearch) -> None:
    looked = await hurried_homepage.look("slow.example")
    assert looked.http.failure is HttpFailure.TIMEOUT
    assert (await verdict_of(hurried_homepage, "slow.example")).status is SiteStatus.UNREACHABLE


async def test_a_huge_homepage_is_read_only_to_its_limit(server: SiteServer) -> None:
    reader = HomepageSearch(allow_private_addresses=True, pinned=server.pinned(), signatures=SIGNATURES,
                            max_bytes=200_000)
    try:
        looked = await reader.look("huge.example")
    finally:
        await reader.aclose()
    assert len(looked.http.body) <= 200_000
    # The for-sale notice past the limit is never read: the page is a company's.
    assert site_status(SiteFacts("huge.example", ANSWERED, http=looked.http), SIGNATURES).status is SiteStatus.LIVE


async def test_a_refused_connection_is_unreachable() -> None:
    with refusing_port() as port:
        reader = HomepageSearch(allow_private_addresses=True, pinned={"closed.example": ("127.0.0.1", port)})
        try:
            looked = await reader.look("closed.example")
        finally:
            await reader.aclose()
    assert looked.http.failure is HttpFailure.REFUSED


async def test_pinned_addresses_still_pass_the_address_check(server: SiteServer) -> None:
    reader = HomepageSearch(pinned=server.pinned())  # private addresses not allowed
    try:
        looked = await reader.look("old-brand.example")
        with pytest.raises(ProviderError, match=r"refusing to fetch old-brand.example: .*127.0.0.1 \(loopback"):
            await reader.gather("old-brand.example")
    finally:
        await reader.aclose()
    assert looked.http.failure is HttpFailure.FORBIDDEN_ADDRESS


async def test_a_looked_at_page_is_the_evidence_without_a_second_fetch(server: SiteServer,
                                                                       homepage: HomepageSearch) -> None:
    await homepage.look("www-hop.example")
    before = len(server.requests)
    [evidence] = await homepage.gather("www-hop.example")
    assert evidence.title == "Hop Co" and len(server.requests) == before
    await homepage.gather("www-hop.example")  # kept for one gather only: the next one fetches
    assert len(server.requests) > before


@pytest.mark.parametrize("domain", ["acme-snacks.com", load("blocked_anubis")["domain"]])
async def test_a_walls_page_is_never_evidence_and_the_chain_asks_the_next_provider(
    homepage: HomepageSearch, domain: str,
) -> None:
    await homepage.look(domain)
    with pytest.raises(ProviderError, match="its page is not evidence"):
        await homepage.gather(domain)
    chain = SearchChain([homepage, StaticSearch(name="searxng")])
    evidence = await chain.gather(domain)
    assert evidence and {item.provider for item in evidence} == {"searxng"}


async def test_with_no_look_before_the_provider_still_refuses_a_walls_page(homepage: HomepageSearch) -> None:
    # The pre-check off: the homepage provider fetches for itself, and still never cites a wall.
    with pytest.raises(ProviderError, match="behind a Cloudflare challenge; its page is not evidence"):
        await homepage.gather("acme-snacks.com")
