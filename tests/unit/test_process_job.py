"""process_job on the in-memory graph: cheapest path first, LLM calls counted, failures isolated."""

import asyncio
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from dependency_injector import providers

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.providers import ScriptedLLM, StaticSearch
from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import (
    Answer,
    DomainResult,
    Evidence,
    Job,
    JobStatus,
    KnownCompany,
    QuoteStatus,
    ResultStatus,
    Source,
)
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.ports.providers import Search
from firmsift.ports.queue import QueueMessage
from firmsift.services.dead_letters import DEAD_LETTER_ERROR, fail_dead_lettered, redrive_dead_lettered
from firmsift.services.process import JobDependencies, process_job

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
# Quotes StaticSearch's snippet, so the answer verifies and keeps its confidence.
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "Makes and sells packaged snacks"}'


def graph(llm: ScriptedLLM | None = None, search: Search | None = None, llm_slots: int = 4,
          store: InMemoryStore | None = None) -> Container:
    """The in-memory graph, asking `llm` (YES to everything unless given) and searching with `search`."""
    container = in_memory_container(Settings(llm_concurrency=llm_slots))
    container.llm.override(llm or ScriptedLLM(YES))
    if search is not None:
        container.searches.override(providers.Object((search,)))
    if store is not None:
        container.store.override(store)
    return container


def make(llm: ScriptedLLM | None = None, search: Search | None = None, llm_slots: int = 4,
         store: InMemoryStore | None = None,
         **overrides: Any) -> tuple[InMemoryStore, JobDependencies, ScriptedLLM]:
    """The graph's store, a worker's JobDependencies (its clock stopped at NOW, and as
    `overrides` say otherwise) and the scripted LLM it asks."""
    container = graph(llm, search, llm_slots, store)
    return container.store(), container.job_dependencies(now=lambda: NOW, **overrides), container.llm()


async def add_job(store: InMemoryStore, *domains: str, job_id: str = "job-1") -> None:
    await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW, domains=domains))


def cached(domain: str, confidence: int, age_days: float, status: ResultStatus = ResultStatus.DONE) -> Answer:
    return Answer(domain=domain, classifier="cpg", status=status, answered_at=NOW - timedelta(days=age_days),
                  source=Source.LLM, answer=status is ResultStatus.DONE or None, confidence=confidence, reason="old",
                  prompt_version=load_catalog()["cpg"].prompt_version)


async def test_uncached_domains_cost_one_llm_call_each_and_are_cached() -> None:
    store, deps, llm = make()
    await add_job(store, "a.com", "b.com")
    job = await process_job("job-1", deps)
    assert job is not None and job.status is JobStatus.DONE
    assert [(r.domain, r.status, r.answer, r.confidence, r.source) for r in job.results] == [
        ("a.com", ResultStatus.DONE, True, 5, Source.LLM),
        ("b.com", ResultStatus.DONE, True, 5, Source.LLM),
    ]
    assert len(llm.history) == 2
    stored = store.answers[("a.com", "cpg")]
    assert stored.model == "scripted-model" and stored.prompt_version == deps.catalog["cpg"].prompt_version
    assert stored.evidence[0].url == "https://a.com/about"


async def test_fresh_cached_answer_costs_no_llm_call() -> None:
    store, deps, llm = make()
    store.answers[("a.com", "cpg")] = cached("a.com", 4, age_days=59)
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    assert job.results[0].source is Source.CACHE and job.results[0].reason == "old"
    assert llm.history == []


@pytest.mark.parametrize(("confidence", "age"), [(4, 60), (3, 30), (1, 0)])
async def test_stale_or_unsure_cache_is_asked_again(confidence: int, age: float) -> None:
    store, deps, llm = make()
    store.answers[("a.com", "cpg")] = cached("a.com", confidence, age_days=age)
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    assert job.results[0].source is Source.LLM
    assert len(llm.history) == 1


async def test_an_answer_to_an_older_prompt_is_asked_again() -> None:
    from dataclasses import replace

    store, deps, llm = make()
    store.answers[("a.com", "cpg")] = replace(cached("a.com", 5, age_days=1), prompt_version="cpg-old")
    await add_job(store, "a.com")
    await process_job("job-1", deps)
    assert len(llm.history) == 1


async def test_failed_cache_entry_is_never_reused() -> None:
    store, deps, llm = make()
    store.answers[("a.com", "cpg")] = cached("a.com", 5, age_days=0, status=ResultStatus.FAILED)
    await add_job(store, "a.com")
    await process_job("job-1", deps)
    assert len(llm.history) == 1


async def test_known_company_and_its_subdomains_cost_no_llm_call() -> None:
    store, deps, llm = make()
    await store.upsert_known([KnownCompany("unilever.com", "Unilever")])
    await add_job(store, "unilever.com", "shop.unilever.com")
    job = await process_job("job-1", deps)
    assert [(r.answer, r.confidence, r.source) for r in job.results] == [(True, 5, Source.KNOWN_COMPANY)] * 2
    assert llm.history == []


async def test_redelivery_after_partial_run_only_asks_for_unfinished_domains() -> None:
    store, deps, llm = make()
    await add_job(store, "a.com", "b.com", "c.com")
    done = Answer(domain="a.com", classifier="cpg", status=ResultStatus.DONE, answered_at=NOW, source=Source.LLM,
                  answer=True, confidence=5)
    await store.save_result("job-1", DomainResult.from_answer(done, Source.LLM), done)
    await store.set_job_status("job-1", JobStatus.RUNNING)  # the crashed worker got this far
    job = await process_job("job-1", deps)
    assert job.status is JobStatus.DONE
    assert llm.calls_about("a.com") == 0
    assert llm.calls_about("b.com") == 1 and llm.calls_about("c.com") == 1


async def test_one_failing_domain_does_not_fail_the_job() -> None:
    llm = ScriptedLLM(YES)
    llm.enqueue(ProviderError("HTTP 500 from provider"), "no json here", '{"is_cpg": "perhaps", "confidence": 3}')
    store, deps, _ = make(llm=llm, llm_slots=1)
    await add_job(store, "a.com", "b.com", "c.com", "d.com")
    job = await process_job("job-1", deps)
    assert job.status is JobStatus.DONE
    statuses = [r.status for r in job.results]
    assert statuses.count(ResultStatus.FAILED) == 3 and statuses.count(ResultStatus.DONE) == 1
    errors = sorted(r.error for r in job.results if r.error)
    assert any("HTTP 500" in e for e in errors) and any("no JSON object" in e for e in errors)
    failed = [a for a in store.answers.values() if a.status is ResultStatus.FAILED]
    assert any(a.raw_output == "no json here" for a in failed)


async def test_a_job_whose_every_domain_failed_is_failed() -> None:
    store, deps, _ = make(llm=ScriptedLLM(ProviderError("down")))
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    assert job.status is JobStatus.FAILED


async def test_search_failure_still_asks_without_evidence_and_says_why() -> None:
    store, deps, llm = make(search=StaticSearch(failure=ProviderError("searxng: could not resolve host")))
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    assert job.results[0].status is ResultStatus.DONE and job.results[0].evidence == ()
    assert "no evidence could be gathered" in llm.history[0].user
    assert job.results[0].evidence_status == "none: searxng: could not resolve host"
    assert store.answers[("a.com", "cpg")].evidence_status == "none: searxng: could not resolve host"


async def test_the_evidence_status_says_found_or_nothing_found_and_is_reused_with_the_cache() -> None:
    store, deps, llm = make()
    await add_job(store, "a.com")
    await process_job("job-1", deps)
    await add_job(store, "a.com", job_id="job-2")
    again = await process_job("job-2", deps)
    assert again.results[0].source is Source.CACHE and again.results[0].evidence_status == "found"

    class NothingFound(StaticSearch):
        async def gather(self, domain: str) -> list[Evidence]:
            return []

    store, deps, _ = make(search=NothingFound())
    await add_job(store, "b.com")
    job = await process_job("job-1", deps)
    assert job.results[0].evidence_status == "none: the search found nothing"


async def test_the_answer_records_whose_evidence_it_used_and_the_cache_keeps_it() -> None:
    failing = StaticSearch(ProviderError("homepage: a.com answered HTTP 503"), name="homepage")
    container = graph()
    container.searches.override(providers.Object((failing, StaticSearch(name="searxng"))))
    store, deps = container.store(), container.job_dependencies(now=lambda: NOW)
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    assert (job.results[0].search_provider, job.results[0].evidence_status) == ("searxng", "found")
    assert store.answers[("a.com", "cpg")].search_provider == "searxng"
    await add_job(store, "a.com", job_id="job-2")
    again = await process_job("job-2", deps)
    assert again.results[0].source is Source.CACHE and again.results[0].search_provider == "searxng"


async def test_when_every_search_provider_fails_the_answer_names_each_and_no_provider() -> None:
    container = graph()
    container.searches.override(providers.Object((
        StaticSearch(ProviderError("homepage: a.com answered HTTP 503"), name="homepage"),
        StaticSearch(ProviderError("tavily: search answered HTTP 401 (check the API key)"), name="tavily"))))
    store, deps = container.store(), container.job_dependencies(now=lambda: NOW)
    await add_job(store, "a.com")
    [result] = (await process_job("job-1", deps)).results
    assert result.status is ResultStatus.DONE and result.search_provider is None
    assert result.evidence_status == ("none: homepage: a.com answered HTTP 503; "
                                      "tavily: search answered HTTP 401 (check the API key)")


async def test_a_known_company_needs_no_search_and_has_no_evidence_status() -> None:
    store, deps, llm = make()
    await store.upsert_known([KnownCompany("a.com", "A")])
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    assert job.results[0].source is Source.KNOWN_COMPANY and job.results[0].evidence_status is None
    assert job.results[0].search_provider is None
    assert (job.results[0].quote, job.results[0].quote_status) == (None, None)


async def test_the_quote_and_its_check_are_stored_and_reused_with_the_cache() -> None:
    unverified = '{"is_cpg": true, "confidence": 5, "reasoning": "r", "quote": "Acme bakes sourdough bread daily"}'
    store, deps, llm = make(llm=ScriptedLLM(YES, by_domain={"b.com": unverified}))
    await add_job(store, "a.com", "b.com")
    job = await process_job("job-1", deps)
    assert [(r.confidence, r.quote, r.quote_status) for r in job.results] == [
        (5, "Makes and sells packaged snacks", QuoteStatus.VERIFIED),
        (2, "Acme bakes sourdough bread daily", QuoteStatus.UNVERIFIED),
    ]
    assert store.answers[("b.com", "cpg")].quote_status is QuoteStatus.UNVERIFIED
    await add_job(store, "a.com", "b.com", job_id="job-2")
    again = await process_job("job-2", deps)
    assert [(r.source, r.confidence, r.quote_status) for r in again.results] == [
        (Source.CACHE, 5, QuoteStatus.VERIFIED), (Source.CACHE, 2, QuoteStatus.UNVERIFIED)]
    assert len(llm.history) == 2


async def test_unknown_job_returns_none() -> None:
    _store, deps, _llm = make()
    assert await process_job("nope", deps) is None


async def test_finished_job_is_not_processed_again() -> None:
    store, deps, llm = make()
    await add_job(store, "a.com")
    await process_job("job-1", deps)
    await process_job("job-1", deps)
    assert len(llm.history) == 1


async def test_llm_concurrency_is_capped_worker_wide() -> None:
    llm = ScriptedLLM(YES, delay=0.02)
    store, deps, _ = make(llm=llm, llm_slots=3)
    for n in range(4):
        await add_job(store, *(f"d{n}-{i}.com" for i in range(10)), job_id=f"job-{n}")
    await asyncio.gather(*(process_job(f"job-{n}", deps) for n in range(4)))
    assert len(llm.history) == 40
    assert llm.max_in_flight == 3


async def test_two_jobs_needing_the_same_domain_at_once_share_one_llm_call() -> None:
    llm = ScriptedLLM(YES, delay=0.05)
    store, deps, _ = make(llm=llm)
    await add_job(store, "same.com", job_id="job-a")
    await add_job(store, "same.com", job_id="job-b")
    jobs = await asyncio.gather(process_job("job-a", deps), process_job("job-b", deps))
    assert len(llm.history) == 1
    assert sorted(j.results[0].source.value for j in jobs) == ["cache", "llm"]


async def test_evidence_is_delimited_by_an_unpredictable_marker() -> None:
    store, deps, llm = make()
    await add_job(store, "a.com", "b.com")
    await process_job("job-1", deps)
    users = [call.user for call in llm.history]
    markers = {line for u in users for line in u.splitlines() if line.startswith("<<<EVIDENCE ")}
    assert len(markers) == 2  # one fresh marker per prompt


async def test_two_workers_needing_the_same_domain_at_once_share_one_llm_call() -> None:
    llm = ScriptedLLM(YES, delay=0.1)
    container = graph(llm)
    store, leases = container.store(), container.leases()
    # Two workers: each its own single flight, the same database (store) and leases.
    first, second = (container.job_dependencies(now=lambda: NOW, lease_poll_seconds=0.01) for _ in range(2))
    await add_job(store, "shared.com", "a-only.com", job_id="job-a")
    await add_job(store, "shared.com", "b-only.com", job_id="job-b")
    done_a, done_b = await asyncio.gather(process_job("job-a", first), process_job("job-b", second))
    assert llm.calls_about("shared.com") == 1
    sources = sorted(r.source.value for j in (done_a, done_b) for r in j.results if r.domain == "shared.com")
    assert sources == ["cache", "llm"]
    assert leases.held == {}  # every lease given back once its answer was stored


async def test_a_lapsed_lease_of_a_dead_worker_does_not_block_the_domain() -> None:
    store, deps, llm = make(lease_poll_seconds=0.01)
    await deps.leases.acquire("a.com", "cpg", "dead-worker", ttl_seconds=0.05)
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    assert job.results[0].source is Source.LLM and len(llm.history) == 1


class _AnsweredMeanwhile(InMemoryStore):
    """A store in which another worker stores an answer (and lets go of its lease) right after
    this job looked in the cache: the job's domains run one after another, so its look is old."""

    def __init__(self, answer: Answer) -> None:
        super().__init__()
        self.answer, self.looked = answer, False

    async def get_answers(self, domains, classifier):  # type: ignore[no-untyped-def]
        found = await super().get_answers(domains, classifier)
        if not self.looked:
            self.looked = True
            self.answers[(self.answer.domain, self.answer.classifier)] = self.answer
        return found


@pytest.mark.parametrize("with_leases", [True, False])
async def test_an_answer_stored_by_another_worker_after_the_cache_look_is_not_asked_again(with_leases: bool) -> None:
    container = graph(store=_AnsweredMeanwhile(cached("late.com", 5, 0)))
    store, llm = container.store(), container.llm()
    deps = container.job_dependencies(now=lambda: NOW, leases=container.leases() if with_leases else None)
    await add_job(store, "late.com")
    job = await process_job("job-1", deps)
    assert llm.calls_about("late.com") == 0
    assert job.results[0].source is Source.CACHE and job.results[0].reason == "old"
    if with_leases:
        assert deps.leases.held == {}  # the lease taken to ask was given back at once


class _PoisonSearch:
    """Search results as the web may return them: NUL and lone surrogates in URL and title."""

    name = "poison"

    async def gather(self, domain: str) -> list[Evidence]:
        return [Evidence(url=f"https://{domain}/\ud800", title="Snacks\x00", snippet="crisps \udcff")]


# Raw NUL and surrogate in the text, and JSON escapes that decode to them inside the reason.
POISON = '{"is_cpg": true, "confidence": 4, "reasoning": "Crisps \\u0000 and \\ud800 dips \ud800"}\x00'


async def test_a_poison_answer_and_evidence_are_stored_cleaned_and_paid_for_once() -> None:
    llm = ScriptedLLM(YES, by_domain={"poison.com": POISON})
    store, deps, _ = make(llm=llm, search=_PoisonSearch())
    await add_job(store, "poison.com", "a.com")
    job = await process_job("job-1", deps)
    assert job.status is JobStatus.DONE
    poisoned = job.result_for("poison.com")
    assert (poisoned.status, poisoned.answer, poisoned.source) == (ResultStatus.DONE, True, Source.LLM)
    assert poisoned.reason == "Crisps \ufffd and \ufffd dips \ufffd"
    assert poisoned.evidence == (Evidence("https://poison.com/\ufffd", "Snacks\ufffd", "crisps \ufffd"),)
    stored = store.answers[("poison.com", "cpg")]
    assert stored.raw_output is not None and stored.raw_output.endswith("\ufffd\"}\ufffd")
    assert job.result_for("a.com").status is ResultStatus.DONE
    await store.set_job_status("job-1", JobStatus.RUNNING)  # as if redelivered before it was acknowledged
    await process_job("job-1", deps)
    assert llm.calls_about("poison.com") == 1 and llm.calls_about("a.com") == 1


async def test_a_provider_error_quoting_poison_fails_its_domain_with_a_storable_error() -> None:
    llm = ScriptedLLM(YES, by_domain={"bad.com": ProviderError("HTTP 400: unexpected '\x00' at \ud800")})
    store, deps, _ = make(llm=llm)
    await add_job(store, "bad.com", "a.com")
    job = await process_job("job-1", deps)
    assert job.result_for("bad.com").error == "LLM call failed: HTTP 400: unexpected '\ufffd' at \ufffd"
    assert job.result_for("a.com").status is ResultStatus.DONE


async def test_a_result_the_store_refuses_fails_its_domain_alone_and_is_not_redone() -> None:
    """Whatever slipped past the cleaning (here a known company's name written by an older
    version): its domain fails with a clear error, its siblings are stored, the job finishes."""
    store, deps, llm = make()
    store.companies["odd.com"] = KnownCompany("odd.com", "Odd\x00 Foods")
    await add_job(store, "odd.com", "a.com", "b.com")
    job = await process_job("job-1", deps)
    assert job.status is JobStatus.DONE
    odd = job.result_for("odd.com")
    assert odd.status is ResultStatus.FAILED and odd.source is Source.KNOWN_COMPANY
    assert odd.error == "the answer could not be stored: the reason of odd.com holds a NUL character"
    assert [job.result_for(d).status for d in ("a.com", "b.com")] == [ResultStatus.DONE] * 2
    assert len(llm.history) == 2


async def test_a_shared_call_that_failed_is_reported_as_the_llm_failure_never_as_cache() -> None:
    llm = ScriptedLLM(ProviderError("timed out"), delay=0.05)
    store, deps, _ = make(llm=llm)
    await add_job(store, "same.com", job_id="job-a")
    await add_job(store, "same.com", job_id="job-b")
    jobs = await asyncio.gather(process_job("job-a", deps), process_job("job-b", deps))
    assert len(llm.history) == 1
    assert [(j.results[0].status, j.results[0].source) for j in jobs] == [(ResultStatus.FAILED, Source.LLM)] * 2


async def _until(condition) -> None:  # type: ignore[no-untyped-def]
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


async def test_a_late_delivery_cannot_turn_a_dead_lettered_job_done() -> None:
    """The job is dead-lettered (FAILED, caller told) while a stale delivery still waits for the
    LLM; when the answer comes, the job stays as the caller was told and the answer is cached."""
    llm = ScriptedLLM(YES, delay=0.3)
    store, deps, _ = make(llm=llm)
    await add_job(store, "slow.com", "other.com")
    late = asyncio.create_task(process_job("job-1", deps))
    await _until(lambda: llm.in_flight == 2)
    dead_letter = QueueMessage("m1", '{"job_id": "job-1"}', "r1", 3, "job-1")
    [told] = await fail_dead_lettered([dead_letter], store)
    assert told.status is JobStatus.FAILED and told.error == DEAD_LETTER_ERROR
    finished = await late
    assert finished == told == await store.get_job("job-1")  # what GET shows is what the caller was told
    assert {d for d, _ in store.answers} == {"slow.com", "other.com"}  # the paid answers are kept
    # A redrive then finishes from the cache, without asking again.
    queue = InMemoryQueue("jobs", visibility_timeout=30, max_receives=None)
    assert await redrive_dead_lettered(store, queue, limit=10) == ["job-1"]
    redone = await process_job("job-1", deps)
    assert redone.status is JobStatus.DONE and {r.source for r in redone.results} == {Source.CACHE}
    assert len(llm.history) == 2


class _DeadLetteredAfterFirstLook(InMemoryStore):
    """A store in which the dead-letter drain marks the job FAILED right after a delivery's
    first look at it: the delivery must not then set it RUNNING again."""

    def __init__(self) -> None:
        super().__init__()
        self.looks = 0

    async def get_job(self, job_id):  # type: ignore[no-untyped-def]
        job = await super().get_job(job_id)
        self.looks += 1
        if self.looks == 1:
            await self.set_job_status(job_id, JobStatus.FAILED, error=DEAD_LETTER_ERROR)
        return job


async def test_a_job_dead_lettered_before_its_delivery_starts_running_is_left_failed() -> None:
    store, deps, llm = make(store=_DeadLetteredAfterFirstLook())
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    assert (job.status, job.error) == (JobStatus.FAILED, DEAD_LETTER_ERROR) and llm.history == []


@pytest.mark.parametrize(("retries", "replies", "status", "calls"), [
    (0, ["not json at all"], ResultStatus.FAILED, 1),  # a provider's: the row fails, retried on request
    (2, ["not json at all", YES], ResultStatus.DONE, 2),  # a local server's: asked again, for free
    (2, ["{broken", "{broken", "{broken"], ResultStatus.FAILED, 3),  # and not forever
])
async def test_unreadable_output_is_asked_again_as_often_as_the_worker_says(
        retries: int, replies: list[str], status: ResultStatus, calls: int) -> None:
    llm = ScriptedLLM(YES)
    llm.enqueue(*replies)
    store, deps, llm = make(llm, unreadable_retries=retries)
    await add_job(store, "a.com")
    [result] = (await process_job("job-1", deps)).results
    assert result.status is status and llm.calls_about("a.com") == calls
    if status is ResultStatus.FAILED:
        assert result.error is not None and result.error.startswith("unreadable model output")


async def test_the_attempts_asked_again_are_billed_in_the_answer() -> None:
    llm = ScriptedLLM(YES, tokens=(100, 10))
    llm.enqueue("not json at all", YES)
    store, deps, llm = make(llm, unreadable_retries=2)
    await add_job(store, "a.com")
    [result] = (await process_job("job-1", deps)).results
    assert (result.status, result.tokens_in, result.tokens_out) == (ResultStatus.DONE, 200, 20)  # both calls


def test_a_worker_asks_a_local_server_again_and_a_provider_not() -> None:
    from firmsift.entrypoints.wiring.worker import unreadable_retries

    assert unreadable_retries(Settings(llm_api_base="http://127.0.0.1:8080/v1")) == 2
    assert unreadable_retries(Settings()) == 0
    assert unreadable_retries(Settings(llm_api_base="http://127.0.0.1:8080/v1", llm_unreadable_retries=0)) == 0
