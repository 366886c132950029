"""Behind an outbound proxy (HTTPS_PROXY), as a proxied corporate network has it: the homepage is
fetched through the proxy, a site the proxy cannot reach ends nothing (unknown), and local DNS,
which may know no public name there, is never asked (a real proxy on loopback, a real homepage reader)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.adapters.memory.resolver import InMemoryResolver
from firmsift.adapters.search.homepage import HomepageSearch
from firmsift.domain.dns_trust import DEFAULT_CANARIES
from firmsift.domain.errors import ProviderError
from firmsift.domain.site_status import SiteStatus
from firmsift.services.dns_trust import DnsTrust
from firmsift.services.precheck import Precheck
from tests.support.forward_proxy import ForwardProxy
from tests.support.site_server import Page, SiteServer, fixture_page

pytestmark = pytest.mark.anyio
LIVE = Page(body=b"<title>Fresh Foods</title><p>We bake bread and sell it in shops.</p>")


@pytest.fixture
def world() -> Iterator[tuple[SiteServer, ForwardProxy]]:
    parked_domain, parked_page = fixture_page("parked_sedo_page")
    with SiteServer({"fresh-foods.com": LIVE, parked_domain: parked_page}) as sites, \
            ForwardProxy(sites.port, {"fresh-foods.com", parked_domain}) as proxy:
        yield sites, proxy


async def refuse_to_resolve(host: str, port: int) -> list[str]:
    raise ProviderError(f"the local resolver was asked about {host}")


def reader(proxy: ForwardProxy, no_proxy: str = "") -> HomepageSearch:
    return HomepageSearch(timeout=10, total_timeout=30, resolver=refuse_to_resolve, proxy=proxy.url,
                          no_proxy=no_proxy, signatures=load_signatures())


async def test_the_homepage_comes_through_the_proxy_and_local_dns_is_not_asked(world) -> None:  # noqa: ANN001
    sites, proxy = world
    homepage = reader(proxy)
    resolver = InMemoryResolver()  # NXDOMAIN for every name, as the resolver of such a network may answer
    check = Precheck(resolver, homepage, load_signatures(),
                     trust=DnsTrust(resolver, DEFAULT_CANARIES, proxy_variable="HTTPS_PROXY"))
    try:
        parked_domain = fixture_page("parked_sedo_page")[0]
        found = {domain: (await check.look(domain)).status
                 for domain in ("fresh-foods.com", parked_domain, "gone-brand.com")}
    finally:
        await homepage.aclose()
    # The proxy could not reach gone-brand.com (502): that may be the proxy's trouble, not the
    # site's, so it ends nothing (unknown: asked as usual).
    assert found == {"fresh-foods.com": SiteStatus.LIVE, parked_domain: SiteStatus.PARKED,
                     "gone-brand.com": SiteStatus.UNKNOWN}
    assert resolver.history == []
    assert ("GET", "http://fresh-foods.com/") in proxy.requests and ("CONNECT", "fresh-foods.com:443") in proxy.requests
    assert ("fresh-foods.com", "/") in sites.requests


async def test_a_host_named_in_no_proxy_is_fetched_directly(world) -> None:  # noqa: ANN001
    _sites, proxy = world
    homepage = reader(proxy, no_proxy="localhost,.internal")
    try:
        with pytest.raises(ProviderError, match="the local resolver was asked about intranet.internal"):
            await homepage.gather("intranet.internal")
    finally:
        await homepage.aclose()
    assert not [target for _method, target in proxy.requests if "intranet" in target]


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://localhost/"])
async def test_through_the_proxy_a_redirect_to_a_private_address_is_still_refused(target: str) -> None:
    from tests.support.site_server import redirect

    with SiteServer({"sneaky.com": redirect(target)}) as sites, ForwardProxy(sites.port, {"sneaky.com"}) as proxy:
        homepage = reader(proxy)
        try:
            with pytest.raises(ProviderError, match="refusing to fetch"):
                await homepage.gather("sneaky.com")
        finally:
            await homepage.aclose()
        assert [target for _method, target in proxy.requests if "sneaky" not in target] == []
