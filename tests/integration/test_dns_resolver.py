"""The dnspython resolver against a DNS server on loopback: addresses, CNAME chain, the zone's
name servers, and NXDOMAIN, no address, SERVFAIL and silence each told apart, in bounded time.
Never the internet: the resolver is pointed at 127.0.0.1 only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from firmsift.adapters.dns.dnspython_resolver import DnspythonResolver
from firmsift.adapters.memory.resolver import InMemoryResolver
from firmsift.domain.site_facts import DnsFacts, DnsOutcome
from tests.support.loopback_dns import LoopbackDns, Zone
from tests.support.waiting import no_hang

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackDns]:
    zone = Zone(servfail={"broken.test."}, silent={"slow.test."})
    zone.add("acme.test.", "A", ["192.0.2.1"])
    zone.add("acme.test.", "AAAA", ["2001:db8::1"])
    zone.add("acme.test.", "NS", ["ns2.host.test.", "NS1.Host.test."])
    zone.add("www.acme.test.", "CNAME", ["shop.acme.test."])
    zone.add("shop.acme.test.", "CNAME", ["edge.cdn.test."])
    zone.add("edge.cdn.test.", "A", ["192.0.2.9"])
    zone.add("www.parked.test.", "CNAME", ["parkingpage.namecheap.example."])
    zone.add("parked.test.", "NS", ["dns1.registrar.example."])
    zone.add("mail-only.test.", "MX", ["10 mx.mail-only.test."])
    zone.add("mail-only.test.", "NS", ["ns1.host.test."])
    zone.add("loop1.test.", "CNAME", ["loop2.test."])
    zone.add("loop2.test.", "CNAME", ["loop1.test."])
    with LoopbackDns(zone) as dns_server:
        yield dns_server


def resolver(server: LoopbackDns, **limits: float) -> DnspythonResolver:
    return DnspythonResolver(nameservers=["127.0.0.1"], port=server.port, **limits)


async def test_addresses_and_the_zone_name_servers(server: LoopbackDns) -> None:
    facts = await resolver(server).look_up("acme.test")

    assert facts == DnsFacts(DnsOutcome.ANSWERED, addresses=("192.0.2.1", "2001:db8::1"),
                             name_servers=("ns1.host.test", "ns2.host.test"))


async def test_the_cname_chain_in_order_and_name_servers_from_the_parent_zone(server: LoopbackDns) -> None:
    facts = await resolver(server).look_up("WWW.acme.test.")

    assert facts.outcome is DnsOutcome.ANSWERED and facts.addresses == ("192.0.2.9",)
    assert facts.cname_chain == ("shop.acme.test", "edge.cdn.test")
    assert facts.name_servers == ("ns1.host.test", "ns2.host.test")


async def test_a_cname_to_a_missing_name_has_no_address_and_keeps_its_chain(server: LoopbackDns) -> None:
    facts = await resolver(server).look_up("www.parked.test")

    assert (facts.outcome, facts.cname_chain) == (DnsOutcome.NO_ADDRESS, ("parkingpage.namecheap.example",))
    assert facts.name_servers == ("dns1.registrar.example",)


async def test_nxdomain_no_address_and_servfail_are_told_apart(server: LoopbackDns) -> None:
    dns = resolver(server)

    assert await dns.look_up("never-registered.test") == DnsFacts(DnsOutcome.NXDOMAIN)
    mail_only = await dns.look_up("mail-only.test")
    assert (mail_only.outcome, mail_only.addresses, mail_only.name_servers) == (
        DnsOutcome.NO_ADDRESS, (), ("ns1.host.test",))
    broken = await dns.look_up("broken.test")
    assert (broken.outcome, broken.detail) == (DnsOutcome.FAILED, "SERVFAIL")


# The silent server never answers: only the limit under test can end the look-up (the others are
# set an hour away), and the outcome's detail names the limit that did.
@pytest.mark.parametrize(("limits", "detail"), [
    ({"timeout": 3600, "lifetime": 3600, "total_timeout": 0.3}, "no answer within 0.3s"),
    ({"timeout": 0.2, "lifetime": 0.4, "total_timeout": 3600}, "no answer within 0.4s"),
], ids=["total_timeout", "lifetime"])
async def test_a_silent_server_is_a_timeout_within_the_limit(
    server: LoopbackDns, limits: dict[str, float], detail: str,
) -> None:
    with no_hang():
        facts = await resolver(server, **limits).look_up("slow.test")

    assert (facts.outcome, facts.detail) == (DnsOutcome.TIMEOUT, detail)


async def test_a_cname_loop_ends(server: LoopbackDns) -> None:
    facts = await resolver(server, total_timeout=3.0).look_up("loop1.test")

    assert facts.outcome in (DnsOutcome.NO_ADDRESS, DnsOutcome.FAILED, DnsOutcome.NXDOMAIN)
    assert len(facts.cname_chain) <= 16


async def test_a_name_dns_cannot_carry_is_a_failure_not_an_exception(server: LoopbackDns) -> None:
    facts = await resolver(server).look_up("a" * 64 + ".test")

    assert facts.outcome is DnsOutcome.FAILED and facts.detail.startswith("not a DNS name")


async def test_the_in_memory_resolver_answers_from_its_table_and_records_each_name() -> None:
    parked = DnsFacts(DnsOutcome.ANSWERED, addresses=("192.0.2.1",), name_servers=("ns1.sedoparking.com",))
    fake = InMemoryResolver({"Parked.Example.": parked})

    assert await fake.look_up("parked.example") == parked
    assert await fake.look_up("other.example") == DnsFacts(DnsOutcome.NXDOMAIN)
    assert fake.history == ["parked.example", "other.example"]
