"""Answers paid for that the database would not store (a SQLite file made read-only): held by the
worker and stored once the database takes them, never asked of the LLM again. On a virtual-time
event loop: backoffs and visibility timeouts pass at once; the tests wait on counters."""

import asyncio
import json
import logging
from datetime import datetime, timezone
from typing import Any

import pytest
from dependency_injector import providers

from firmsift.adapters.memory.providers import ScriptedLLM
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, ResultStatus, Source
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.ports.infrastructure_errors import DatabaseReadOnly
from firmsift.services.process import process_job
from tests.support.virtual_time import VIRTUAL_TIME_BACKEND, loop_clock

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 12, 4, tzinfo=timezone.utc)
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Snacks.", "quote": "Makes and sells packaged snacks"}'
COST = 100 / 1e6 * 1.0 + 10 / 1e6 * 2.0  # 100 tokens in, 10 out at the in-memory graph's fixed prices


@pytest.fixture
def anyio_backend() -> object:
    return VIRTUAL_TIME_BACKEND


class SavesRefusedAtFirst:
    """The in-memory store, except that its first `refusals` saves raise DatabaseReadOnly with
    nothing written, as a SQLite file made read-only does, and then are stored as usual."""

    def __init__(self, inner: InMemoryStore, refusals: float) -> None:
        self.inner = inner
        self.refusals = refusals
        self.refused = 0
        self.stored: list[tuple[str, str]] = []  # (job, domain) of each save that went through

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def save_result(self, job_id: str, result: DomainResult, answer: Answer | None) -> bool:
        if self.refused < self.refusals:
            self.refused += 1
            raise DatabaseReadOnly("the database is read-only: firmsift.db is not writable", "firmsift.db is not writable")
        self.stored.append((job_id, result.domain))
        return await self.inner.save_result(job_id, result, answer)


class TwoSpeeds(ScriptedLLM):
    """Answers b.com after `slow` seconds, every other domain at once."""

    def __init__(self, slow: float) -> None:
        super().__init__(YES, tokens=(100, 10))
        self.slow = slow
        self.answered: list[str] = []

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Any:
        self.delay = self.slow if "Domain: b.com\n" in user else 0.0
        completion = await super().complete(system, user, json_schema=json_schema)
        self.answered.append(user.split("Domain: ", 1)[1].split("\n", 1)[0])
        return completion


def graph(refusals: float, llm: ScriptedLLM | None = None,
          **settings: Any) -> tuple[Container, SavesRefusedAtFirst, ScriptedLLM]:
    llm = llm or ScriptedLLM(YES, tokens=(100, 10), delay=0.5)
    container = in_memory_container(Settings(wait_time=0, llm_concurrency=4, max_receives=10, max_job_seconds=60,
                                             worker_jobs=1, **settings))
    container.llm.override(llm)
    container.clock.override(loop_clock)
    store = SavesRefusedAtFirst(InMemoryStore(), refusals)
    container.store.override(providers.Object(store))
    return container, store, llm


async def add_job(container: Container, job_id: str, *domains: str) -> None:
    await container.store().create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                                           domains=domains))
    await container.work_queue().send(json.dumps({"job_id": job_id}), group_id=job_id, dedup_id=job_id)


async def until(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(2000):  # virtual time: each turn passes at once
        if await condition():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never: {what}")


@pytest.mark.parametrize("visibility_timeout", [0.2, 120.0], ids=["redelivered-first", "saved-first"])
async def test_a_worker_asks_the_llm_once_per_domain_and_stores_each_answer_once_the_database_takes_it(
        visibility_timeout: float) -> None:
    """Five saves refused: the three answers of the first delivery, then two more tries. With a
    short visibility timeout the job comes back while its answers are held (and uses them); with a
    long one the worker's own retries store them first. Either way: three calls, three answers."""
    container, store, llm = graph(5, visibility_timeout=visibility_timeout)
    await add_job(container, "job-1", "a.com", "b.com", "c.com")
    worker = container.worker()
    stop = asyncio.Event()
    run = asyncio.create_task(worker.run(stop))

    async def done() -> bool:
        return (await store.get_job("job-1")).status is JobStatus.DONE

    await until(done, "the job is DONE")
    stop.set()
    await run
    assert store.refused == 5
    assert len(llm.history) == 3 and {llm.calls_about(d) for d in ("a.com", "b.com", "c.com")} == {1}
    job = await store.get_job("job-1")
    assert [(r.status, r.source, r.cost_usd) for r in job.results] == [(ResultStatus.DONE, Source.LLM, COST)] * 3
    assert set(store.inner.answers) == {(d, "cpg") for d in ("a.com", "b.com", "c.com")}
    assert len(worker.deps.held) == 0
    assert await container.work_queue().approximate_counts() == {"visible": 0, "in_flight": 0}


async def test_a_held_answer_serves_another_job_and_its_own_job_s_next_delivery_without_a_call() -> None:
    container, store, llm = graph(1)
    deps = container.job_dependencies(now=lambda: NOW)
    for job_id in ("job-1", "job-2"):
        await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                                   domains=("a.com",)))
    with pytest.raises(DatabaseReadOnly):
        await process_job("job-1", deps)
    assert len(deps.held) == 1 and len(llm.history) == 1

    other = await process_job("job-2", deps)  # the database takes writes again
    assert (other.status, other.results[0].source, other.results[0].cost_usd) == (JobStatus.DONE, Source.CACHE, 0.0)
    again = await process_job("job-1", deps)  # its message came back
    assert (again.status, again.results[0].source, again.results[0].cost_usd) == (JobStatus.DONE, Source.LLM, COST)
    assert len(llm.history) == 1
    assert len(deps.held) == 0 and store.inner.answers[("a.com", "cpg")].cost_usd == COST


async def test_a_refused_save_cancels_no_sibling_s_call_in_flight() -> None:
    """b.com's call is still running when a.com's save is refused: it is answered and held too,
    and the next delivery asks nothing."""
    llm = TwoSpeeds(slow=5.0)
    container, store, _ = graph(2, llm=llm)
    deps = container.job_dependencies(now=lambda: NOW)
    await store.create_job(Job(id="job-1", classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                               domains=("a.com", "b.com")))
    with pytest.raises(DatabaseReadOnly):
        await process_job("job-1", deps)
    assert llm.answered == ["a.com", "b.com"] and store.refused == 2 and len(deps.held) == 2
    done = await process_job("job-1", deps)
    assert done.status is JobStatus.DONE and len(llm.history) == 2


async def test_answers_the_database_never_took_are_logged_as_lost_with_their_cost_when_the_worker_stops(
        caplog: pytest.LogCaptureFixture) -> None:
    container, store, llm = graph(float("inf"), visibility_timeout=120.0)
    await add_job(container, "job-1", "a.com", "b.com")
    worker = container.worker()
    stop = asyncio.Event()
    run = asyncio.create_task(worker.run(stop))

    async def held_both() -> bool:
        return len(worker.deps.held) == 2 and store.refused > 4  # held, and tried again since

    await until(held_both, "both answers held and retried")
    with caplog.at_level(logging.ERROR, logger="firmsift.services.held_answers"):
        stop.set()
        await run
    lost = [r for r in caplog.records if r.getMessage().startswith("answer lost")]
    assert sorted((r.domain, r.cost_usd, r.job_id) for r in lost) == [("a.com", COST, "job-1"), ("b.com", COST, "job-1")]
    assert any(f"2 paid answer(s) lost at shutdown ({2 * COST:.6f} USD known)" in r.getMessage() for r in caplog.records)
    assert len(llm.history) == 2


async def test_a_failure_that_billed_nothing_is_not_held_but_asked_again() -> None:
    """The provider refused (no tokens, no price): keeping that failure would fail the domain for
    good; it is asked again by the next delivery instead, as before the database failed."""
    llm = ScriptedLLM(YES, tokens=(100, 10))
    llm.enqueue(ProviderError("HTTP 500: try later"))
    container, store, _ = graph(1, llm=llm)
    deps = container.job_dependencies(now=lambda: NOW)
    await store.create_job(Job(id="job-1", classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                               domains=("a.com",)))
    with pytest.raises(DatabaseReadOnly):
        await process_job("job-1", deps)
    assert len(deps.held) == 0
    job = await process_job("job-1", deps)
    assert (job.status, job.results[0].status, len(llm.history)) == (JobStatus.DONE, ResultStatus.DONE, 2)


async def test_a_database_failure_before_the_call_leaves_the_domain_unanswered_not_failed() -> None:
    """The LLM's pacing is shared through the database: when it fails, no call went out, and the
    domain is not the LLM's failure (before, it was stored FAILED "LLM call failed: ...")."""
    llm = ScriptedLLM(YES, tokens=(100, 10))
    llm.enqueue(DatabaseReadOnly("the database is read-only: firmsift.db is not writable", "firmsift.db"))
    container, store, _ = graph(0, llm=llm)
    deps = container.job_dependencies(now=lambda: NOW)
    await store.create_job(Job(id="job-1", classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                               domains=("a.com",)))
    with pytest.raises(DatabaseReadOnly):
        await process_job("job-1", deps)
    assert (await store.get_job("job-1")).results[0].status is ResultStatus.PENDING and len(deps.held) == 0
    job = await process_job("job-1", deps)
    assert (job.status, job.results[0].status) == (JobStatus.DONE, ResultStatus.DONE)
