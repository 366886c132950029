"""The pre-check in process_job, on the in-memory graph: DNS and the homepage from the fixtures of
tests/fixtures/sites, LLM calls counted per status, outcomes cached for their TTL, redirects."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from dependency_injector import providers

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.homepage import InMemoryHomepage
from firmsift.adapters.memory.providers import ScriptedLLM, StaticSearch
from firmsift.adapters.memory.resolver import InMemoryResolver
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.dns_trust import DEFAULT_CANARIES
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Answer, Job, JobStatus, KnownCompany, ResultStatus, Source
from firmsift.domain.site_facts import DnsFacts, DnsOutcome, HttpFacts
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.services.process import JobDependencies, process_job
from tests.support.site_fixtures import DEFAULT_DNS, dns_facts, http_facts, load

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "Makes and sells packaged snacks"}'
PROMPT_VERSION = load_catalog()["cpg"].prompt_version


class Graph:
    """A worker's JobDependencies on the in-memory graph, with its resolver, homepage, LLM and store."""

    def __init__(self, search: tuple[Any, ...] | None = None, **settings: Any) -> None:
        container = in_memory_container(Settings(**settings))
        container.llm.override(ScriptedLLM(YES))
        if search is not None:
            container.searches.override(providers.Object(search))
        self.container = container
        self.store: InMemoryStore = container.store()
        self.resolver: InMemoryResolver = container.resolver()
        for canary in DEFAULT_CANARIES:  # a truthful resolver: the names that must exist, exist
            self.resolver.add(canary, DnsFacts(DnsOutcome.ANSWERED, addresses=("192.0.2.1",)))
        self.homepage: InMemoryHomepage = container.homepage()
        self.llm: ScriptedLLM = container.llm()
        self.deps: JobDependencies = container.job_dependencies(now=lambda: NOW)

    def add_case(self, name: str) -> str:
        """The fixture's DNS (www. as the name unless the case says) and homepage; its domain."""
        case = load(name)
        dns = dns_facts(case.get("dns", DEFAULT_DNS))
        self.resolver.add(case["domain"], dns)
        self.resolver.add(f"www.{case['domain']}", dns_facts(case["www_dns"]) if "www_dns" in case else dns)
        http = http_facts(case)
        if http is not None:
            self.homepage.add(case["domain"], http)
        return str(case["domain"])

    async def run(self, *domains: str, job_id: str = "job-1") -> Job:
        await self.store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                                        domains=domains))
        job = await process_job(job_id, self.deps)
        assert job is not None and job.status is JobStatus.DONE
        return job


ENDING = [
    ("no_dns_nxdomain", "no_dns", "NXDOMAIN"),
    ("no_dns_no_address_either", "no_dns", "no address"),
    ("unreachable_refused", "unreachable", "refused"),
    ("unreachable_origin_down", "unreachable", "HTTP 52"),
    ("parked_dns_sedo_ns", "parked", "parked at a domain marketplace (Sedo; name server ns1.sedoparking.com)"),
    ("parked_sedo_page", "parked", "Sedo"),
    ("parked_godaddy_free_parking", "parked", "GoDaddy"),
    ("parked_for_sale_notice", "parked", "for-sale"),
]


@pytest.mark.parametrize(("case", "status", "reason"), ENDING, ids=[case for case, _, _ in ENDING])
async def test_no_dns_unreachable_and_parked_end_the_domain_without_an_llm_call(case: str, status: str,
                                                                                reason: str) -> None:
    graph = Graph()
    domain = graph.add_case(case)
    result = (await graph.run(domain)).results[0]
    assert (result.status, result.answer, result.confidence, result.source) == (ResultStatus.DONE, None, None,
                                                                              Source.PRECHECK)
    assert result.site_status == status and reason in result.reason
    assert graph.llm.history == []
    stored = graph.store.answers[(domain, "cpg")]
    assert (stored.source, stored.site_status, stored.answer) == (Source.PRECHECK, status, None)


async def test_a_failed_dns_lookup_ends_nothing_and_the_llm_is_asked() -> None:
    # SERVFAIL or a timeout says more about the resolver than the domain: no 7-day verdict on it.
    graph = Graph()
    domain = graph.add_case("unknown_servfail")
    result = (await graph.run(domain)).results[0]
    assert (result.source, result.answer, result.site_status) == (Source.LLM, True, "unknown")
    assert graph.llm.calls_about(domain) == 1


async def test_dns_that_settles_the_status_spares_the_homepage_look() -> None:
    graph = Graph()
    domains = [graph.add_case("no_dns_nxdomain"), graph.add_case("parked_dns_sedo_ns")]
    await graph.run(*domains)
    assert graph.homepage.looks == []
    looked_up = [name for name in graph.resolver.history if name not in DEFAULT_CANARIES]
    assert sorted(looked_up) == sorted([*domains, *(f"www.{d}" for d in domains)])


@pytest.mark.parametrize("case", ["live_www_only", "live_contact_form_with_captchas", "live_for_sale_in_normal_text"])
async def test_a_live_domain_is_asked_as_before_and_says_it_was_live(case: str) -> None:
    graph = Graph()
    domain = graph.add_case(case)
    result = (await graph.run(domain)).results[0]
    assert (result.source, result.answer, result.site_status, result.redirected_to) == (Source.LLM, True, "live", None)
    assert graph.llm.calls_about(domain) == 1
    assert graph.store.answers[(domain, "cpg")].site_status == "live"


async def test_blocked_goes_to_the_next_search_provider_and_the_llm() -> None:
    # The homepage provider refuses a wall's page (integration/test_homepage_look.py); here it
    # stands as a failing first member, and the chain's next provider gives the evidence.
    walled = StaticSearch(ProviderError("homepage: x is behind a Cloudflare challenge"), name="homepage")
    graph = Graph(search=(walled, StaticSearch(name="searxng")))
    domain = graph.add_case("blocked_cloudflare_managed_challenge")
    result = (await graph.run(domain)).results[0]
    assert (result.site_status, result.source, result.search_provider) == ("blocked", Source.LLM, "searxng")
    assert graph.llm.calls_about(domain) == 1


def answered(domain: str, *, age_days: float = 1, answer: bool = True, source: Source = Source.LLM,
             site_status: str | None = None) -> Answer:
    return Answer(domain=domain, classifier="cpg", status=ResultStatus.DONE, answered_at=NOW - timedelta(days=age_days),
                  source=source, answer=None if source is Source.PRECHECK else answer,
                  confidence=None if source is Source.PRECHECK else 5, reason="Makes snacks." if source is Source.LLM
                  else "parked with a parking service", prompt_version=None if source is Source.PRECHECK else PROMPT_VERSION,
                  site_status=site_status)


async def test_redirected_says_the_targets_fresh_answer_and_still_asks_by_default() -> None:
    graph = Graph()
    domain = graph.add_case("redirected_to_parent")
    graph.store.answers[("parent-group.example", "cpg")] = answered("parent-group.example")
    result = (await graph.run(domain)).results[0]
    assert (result.site_status, result.redirected_to, result.redirected_answer) == (
        "redirected", "parent-group.example", True)
    assert result.source is Source.LLM and graph.llm.calls_about(domain) == 1


async def test_redirected_reuses_the_targets_answer_when_told() -> None:
    graph = Graph(precheck_reuse_redirect_answer=True)
    domain = graph.add_case("redirected_to_parent")
    graph.store.answers[("parent-group.example", "cpg")] = answered("parent-group.example")
    result = (await graph.run(domain)).results[0]
    assert (result.answer, result.confidence, result.source) == (True, 5, Source.CACHE)
    assert result.reason == "redirects to parent-group.example, whose answer is reused: Makes snacks."
    assert (result.site_status, result.redirected_to, result.redirected_answer) == (
        "redirected", "parent-group.example", True)
    assert graph.llm.history == [] and (domain, "cpg") not in graph.store.answers


@pytest.mark.parametrize("target", [None, "stale", "precheck"])
async def test_redirected_without_a_fresh_target_answer_is_asked_even_when_reuse_is_on(target: str | None) -> None:
    graph = Graph(precheck_reuse_redirect_answer=True)
    domain = graph.add_case("redirected_to_parent")
    if target == "stale":
        graph.store.answers[("parent-group.example", "cpg")] = answered("parent-group.example", age_days=90)
    if target == "precheck":
        graph.store.answers[("parent-group.example", "cpg")] = answered("parent-group.example", source=Source.PRECHECK,
                                                                       site_status="parked")
    result = (await graph.run(domain)).results[0]
    assert (result.source, result.redirected_to, result.redirected_answer) == (Source.LLM, "parent-group.example", None)
    assert graph.llm.calls_about(domain) == 1


@pytest.mark.parametrize(("ttl_days", "age_days", "looked_again"), [(7, 6.9, False), (7, 7.1, True), (2, 3, True),
                                                                   (30, 20, False)])
async def test_an_ending_outcome_is_reused_for_its_ttl(ttl_days: float, age_days: float, looked_again: bool) -> None:
    graph = Graph(precheck_ttl_days=ttl_days)
    domain = graph.add_case("parked_sedo_page")
    graph.store.answers[(domain, "cpg")] = answered(domain, age_days=age_days, source=Source.PRECHECK,
                                                    site_status="parked")
    result = (await graph.run(domain)).results[0]
    assert (result.source, result.site_status, result.answer) == (
        Source.PRECHECK if looked_again else Source.CACHE, "parked", None)
    assert (graph.homepage.looks == [domain]) is looked_again
    assert graph.llm.history == []


async def test_known_companies_and_fresh_answers_are_not_looked_at() -> None:
    graph = Graph()
    await graph.store.upsert_known([KnownCompany("known.example")])
    graph.store.answers[("cached.example", "cpg")] = answered("cached.example")
    job = await graph.run("known.example", "cached.example")
    assert [r.source for r in job.results] == [Source.KNOWN_COMPANY, Source.CACHE]
    assert graph.resolver.history == [] and graph.homepage.looks == []


async def test_with_the_precheck_off_every_domain_goes_to_the_llm() -> None:
    graph = Graph(precheck=False)
    domain = graph.add_case("no_dns_nxdomain")
    result = (await graph.run(domain)).results[0]
    assert (result.source, result.site_status) == (Source.LLM, None)
    assert graph.resolver.history == [] and graph.homepage.looks == []


async def test_with_the_precheck_off_its_cached_outcomes_are_not_served() -> None:
    # Turning the pre-check off is how a user says its outcomes are not to be believed (a resolver
    # that lied ended a list as no_dns): the week-old no_dns of yesterday is not served again.
    graph = Graph(precheck=False)
    graph.store.answers[("gone.example", "cpg")] = answered("gone.example", source=Source.PRECHECK,
                                                            site_status="no_dns")
    result = (await graph.run("gone.example")).results[0]
    assert (result.source, result.answer, result.site_status) == (Source.LLM, True, None)
    assert graph.llm.calls_about("gone.example") == 1


async def test_site_statuses_are_counted_in_the_metrics() -> None:
    graph = Graph()
    domains = [graph.add_case(name) for name in ("parked_sedo_page", "parked_dan_com", "no_dns_nxdomain")]
    graph.resolver.add("plain.example", DnsFacts(DnsOutcome.ANSWERED, addresses=("198.51.100.9",)))
    graph.homepage.add("plain.example", HttpFacts(status=200, final_url="https://plain.example/",
                                                  final_registrable_domain="plain.example", body="<p>Hello</p>"))
    graph.deps.on_result = graph.container.metrics().count_domain
    await graph.run(*domains, "plain.example")
    registry = graph.container.metrics().registry

    def counted(status: str) -> float | None:
        return registry.get_sample_value("firmsift_domain_site_statuses_total", {"status": status})

    assert (counted("parked"), counted("no_dns"), counted("live")) == (2, 1, 1)
