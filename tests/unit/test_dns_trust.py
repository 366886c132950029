"""A negative DNS answer ends a domain as no_dns only from a resolver that has shown it answers,
with no proxy in the way, and outside an implausible run of negative answers (domain/dns_trust.py,
services/dns_trust.py): a resolver that denies every name ends nothing and is warned about once."""

from __future__ import annotations

import asyncio
import logging

import pytest

from firmsift.adapters.memory.homepage import InMemoryHomepage
from firmsift.adapters.memory.resolver import InMemoryResolver
from firmsift.domain.dns_trust import DEFAULT_CANARIES, CanaryCheck, NegativeRun
from firmsift.domain.site_facts import DnsFacts, DnsOutcome, HttpFacts
from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.domain.site_status import SiteStatus
from firmsift.services.dns_trust import DnsTrust
from firmsift.services.precheck import Precheck
from tests.support.clocks import Clock

ANSWERED = DnsFacts(DnsOutcome.ANSWERED, addresses=("192.0.2.1",))
NXDOMAIN = DnsFacts(DnsOutcome.NXDOMAIN)
FAILED = DnsFacts(DnsOutcome.FAILED, detail="SERVFAIL")
TRUST_WARNING = "does not trust negative DNS answers"


def truthful(*names: str) -> InMemoryResolver:
    """A resolver that knows the canaries and `names`; NXDOMAIN for every other name."""
    return InMemoryResolver({name: ANSWERED for name in (*DEFAULT_CANARIES, *names)})


def lying() -> InMemoryResolver:
    return InMemoryResolver()  # NXDOMAIN for everything, canaries included


def precheck(resolver: InMemoryResolver, trust: DnsTrust) -> Precheck:
    return Precheck(resolver, InMemoryHomepage({"live.com": HttpFacts(status=200, body="<title>Live</title>")}),
                    load_signatures(), trust=trust)


def statuses(check: Precheck, domains: list[str]) -> list[SiteStatus]:
    async def look() -> list[SiteStatus]:
        return [(await check.look(domain)).status for domain in domains]
    return asyncio.run(look())


def test_most_canaries_must_resolve() -> None:
    names = ("a.com", "b.com", "c.com")
    assert CanaryCheck.of(names, [ANSWERED, ANSWERED, NXDOMAIN]).doubt() is None  # one canary gone: still trusted
    doubt = CanaryCheck.of(names, [ANSWERED, NXDOMAIN, FAILED]).doubt()
    assert doubt == "the resolver denies names that must exist: b.com (nxdomain), c.com (failed)"


def test_a_run_is_implausible_only_once_enough_lookups_are_mostly_negative() -> None:
    run = NegativeRun(window=10, least=5, share=0.8)
    for _ in range(4):
        run.record(NXDOMAIN)
    assert run.doubt() is None  # 4 look-ups prove nothing
    run.record(NXDOMAIN)
    assert run.doubt() == "5 of the last 5 domains looked up had no DNS, too many to be true"
    for _ in range(5):
        run.record(ANSWERED)
        run.record(FAILED)  # a failure says nothing either way: not counted
    assert run.doubt() is None  # 5 of 10: a list with dead domains, not a lying resolver
    with pytest.raises(ValueError):
        NegativeRun(window=5, least=6)


def test_a_resolver_that_denies_every_name_ends_no_domain_and_is_warned_about_once(
        caplog: pytest.LogCaptureFixture) -> None:
    resolver = lying()
    check = precheck(resolver, DnsTrust(resolver, DEFAULT_CANARIES))
    with caplog.at_level(logging.INFO, logger="firmsift.services.dns_trust"):
        found = statuses(check, [f"company-{n}.com" for n in range(30)])
    assert found == [SiteStatus.UNKNOWN] * 30
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and TRUST_WARNING in warnings[0].getMessage()
    assert "example.com (nxdomain)" in warnings[0].getMessage()
    # The canaries were asked once, not once per domain.
    assert resolver.history.count("example.com") == 1


def test_the_reason_a_user_reads_says_why_the_domain_was_not_ended() -> None:
    resolver = lying()
    trust = DnsTrust(resolver, DEFAULT_CANARIES)
    verdict = asyncio.run(precheck(resolver, trust).look("gone.com"))
    assert verdict.status is SiteStatus.UNKNOWN
    assert verdict.reason.startswith("unknown: DNS found no address, but the resolver denies names that must exist")
    assert len(verdict.reason) <= 200
    assert trust.state().startswith("degraded: the resolver denies names that must exist")


def test_a_truthful_resolver_still_ends_a_dead_domain() -> None:
    resolver = truthful("live.com")
    trust = DnsTrust(resolver, DEFAULT_CANARIES)
    assert statuses(precheck(resolver, trust), ["live.com", "gone.com"]) == [SiteStatus.LIVE, SiteStatus.NO_DNS]
    assert trust.state() == "ok"


def test_the_canaries_are_asked_again_once_their_last_look_is_old(caplog: pytest.LogCaptureFixture) -> None:
    resolver, clock = lying(), Clock()
    check = precheck(resolver, DnsTrust(resolver, DEFAULT_CANARIES, recheck_seconds=300, clock=clock))
    assert statuses(check, ["gone.com"]) == [SiteStatus.UNKNOWN]
    for name in DEFAULT_CANARIES:  # the network comes back
        resolver.add(name, ANSWERED)
    clock.now = 299
    assert statuses(check, ["gone.com"]) == [SiteStatus.UNKNOWN]  # the last look still stands
    clock.now = 300
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="firmsift.services.dns_trust"):
        assert statuses(check, ["gone.com"]) == [SiteStatus.NO_DNS]
    assert [r.getMessage() for r in caplog.records] == ["the pre-check trusts negative DNS answers again"]
    assert resolver.history.count("example.com") == 2


def test_an_implausible_run_stops_negative_conclusions_though_the_canaries_answer() -> None:
    resolver = truthful()
    trust = DnsTrust(resolver, DEFAULT_CANARIES, run=NegativeRun(window=10, least=5, share=0.8))
    found = statuses(precheck(resolver, trust), [f"gone-{n}.com" for n in range(8)])
    assert found == [SiteStatus.NO_DNS] * 4 + [SiteStatus.UNKNOWN] * 4
    assert "had no DNS, too many to be true" in trust.state()


def test_no_canaries_means_the_resolver_is_believed_untested() -> None:
    resolver = lying()
    assert statuses(precheck(resolver, DnsTrust(resolver, ())), ["gone.com"]) == [SiteStatus.NO_DNS]
    assert resolver.history == ["gone.com", "www.gone.com"]


def test_behind_a_proxy_local_dns_is_not_asked_and_the_homepage_says_it_all() -> None:
    resolver = lying()  # such a network's resolver may know no public name
    trust = DnsTrust(resolver, DEFAULT_CANARIES, proxy_variable="HTTPS_PROXY")
    check = precheck(resolver, trust)
    assert statuses(check, ["live.com"]) == [SiteStatus.LIVE]  # fetched (through the proxy), not ended as no_dns
    assert resolver.history == []
    assert trust.state() == "ok"
