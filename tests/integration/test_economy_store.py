"""Economy mode end to end below HTTP, on the in-memory store, SQLite and PostgreSQL, with the real
OpenAI batch client against the scripted batch server: an economy batch's questions go out in one
provider batch and come back at the batch price; expired and failed requests are asked again,
alone; a crash between creating a batch and recording it finds the batch instead of creating
another; `firmsift refresh` asks again about old answers only; a cancelled batch's questions not
uploaded yet are never sent, even those of a job running at the cancel."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from dependency_injector import providers
from sqlalchemy import event, text, update

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.llm.openai_batches import OpenAIBatches
from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.adapters.sql.deferred_questions import ADD_WAITER
from firmsift.adapters.sql.tables import batches
from firmsift.domain.batches import BATCH_CANCELLED_RUNNING, BATCH_CANCELLED_WAITING, Batch, BatchPlan, InputRow
from firmsift.domain.economy import BatchMode
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, ResultStatus, Source
from firmsift.domain.normalize import normalize_domain
from firmsift.services.batch_intake import RecordBatchThenPublish
from firmsift.services.dead_letters import job_id_of
from firmsift.services.process import JobDependencies, process_job
from firmsift.services.provider_batches import ProviderBatchDependencies, provider_batch_round
from firmsift.services.refresh import refresh_stale_answers
from tests.support.fake_openai_batch_server import FakeOpenAIBatchServer, Script

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
BATCH_PRICE = FixedPricing(0.5, 1.0)  # USD per million tokens: half of the normal FixedPricing(1.0, 2.0)


@dataclass
class Stores:
    store: Any
    batches: Any
    questions: Any
    leases: Any


@pytest.fixture
def stores(backend_container) -> Stores:  # noqa: ANN001
    """The stores on each backend."""
    return Stores(backend_container.store(), backend_container.batches(), backend_container.deferred_questions(),
                  backend_container.leases())


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
async def server(script: Script) -> AsyncIterator[FakeOpenAIBatchServer]:
    server = FakeOpenAIBatchServer(script)
    with server:
        yield server


class World:
    def __init__(self, stores: Stores, jobs: JobDependencies, server: FakeOpenAIBatchServer,
                 client: httpx.AsyncClient) -> None:
        self.stores = stores
        self.server = server
        self.catalog = load_catalog()
        self.finished: list[str] = []
        self.batch_ids: list[str] = []  # of the batches submitted, in order
        self._ids = (f"00000000-0000-4000-8000-{n:012d}" for n in itertools.count(1))
        self.jobs = jobs
        self.provider = OpenAIBatches(client, server.base_url, "sk-test", model="openai/gpt-test", max_tokens=400)

    def rounds(self) -> ProviderBatchDependencies:
        async def finished(job: Job) -> None:
            self.finished.append(job.id)

        return ProviderBatchDependencies(
            questions=self.stores.questions, provider=self.provider, jobs=self.stores.store, catalog=self.catalog,
            pricing=BATCH_PRICE, model="gpt-test", leases=self.stores.leases, on_job_finished=finished)

    async def record(self, *domains: str, job_size: int = 2) -> list[str]:
        """An economy batch of `domains` (`job_size` to a job), recorded; its jobs' ids."""
        batch = Batch(id=next(self._ids), classifier="cpg", created_at=NOW, mode=BatchMode.ECONOMY)
        rows = [InputRow(i, None, f'"{d}"', d) for i, d in enumerate(domains)]
        plan = BatchPlan(batch, rows, read_domain=normalize_domain, job_size=job_size, max_domains=100,
                         new_job_id=lambda: next(self._ids))
        await self.stores.batches.record(plan)
        self.batch_ids.append(batch.id)
        return plan.job_ids

    async def submit(self, *domains: str) -> list[str]:
        """An economy batch of `domains` (two to a job), its jobs processed; their ids."""
        job_ids = await self.record(*domains)
        for job_id in job_ids:
            job = await process_job(job_id, self.jobs)
            assert job is not None and job.status is JobStatus.RUNNING
        return job_ids

    async def until_finished(self, job_ids: list[str], rounds: int = 12) -> list[Job]:
        deps = self.rounds()
        for _ in range(rounds):
            await provider_batch_round(deps)
            jobs = [await self.stores.store.get_job(job_id) for job_id in job_ids]
            if all(job is not None and job.status.finished for job in jobs):
                return jobs  # type: ignore[return-value]
        raise AssertionError(f"jobs unfinished after {rounds} rounds: {jobs}")


@pytest.fixture
async def world(backend_container, stores: Stores, server: FakeOpenAIBatchServer) -> AsyncIterator[World]:  # noqa: ANN001
    # A worker's job dependencies as the wiring builds them on the backend, asking a scripted LLM
    # and a static search at FixedPricing(1.0, 2.0), without the pre-check.
    backend_container.llm.override(ScriptedLLM())
    backend_container.searches.override(providers.Object((StaticSearch(),)))
    backend_container.pricing.override(FixedPricing(1.0, 2.0))
    backend_container.precheck.override(None)
    async with httpx.AsyncClient() as client:
        yield World(stores, backend_container.job_dependencies(), server, client)


async def test_an_economy_batch_is_answered_by_one_provider_batch_at_the_batch_price(world: World) -> None:
    job_ids = await world.submit("acme.com", "beta.org", "gamma.net")
    jobs = await world.until_finished(job_ids)
    results = [r for job in jobs for r in job.results]
    assert [(r.domain, r.status, r.source) for r in results] == [
        ("acme.com", ResultStatus.DONE, Source.LLM), ("beta.org", ResultStatus.DONE, Source.LLM),
        ("gamma.net", ResultStatus.DONE, Source.LLM)]
    # The scripted server reports 10 tokens in and 10 out per answer: 15 micro-dollars at the batch
    # price, half of the normal FixedPricing(1.0, 2.0)'s 30.
    assert [r.cost_usd for r in results] == pytest.approx([15e-6] * 3)
    assert len(world.server.created) == 1 and sorted(world.finished) == sorted(job_ids)
    [lines] = world.server.uploads.values()
    assert {line["custom_id"] for line in lines} == {"cpg/acme.com", "cpg/beta.org", "cpg/gamma.net"}
    assert {line["body"]["model"] for line in lines} == {"gpt-test"}  # the provider's name, no litellm prefix
    assert lines[0]["body"]["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("script", [Script(expire_batches=1, expire_after=1)])
async def test_an_expired_batch_resubmits_only_what_it_left_unanswered(world: World) -> None:
    job_ids = await world.submit("acme.com", "beta.org", "gamma.net")
    jobs = await world.until_finished(job_ids)
    assert all(r.status is ResultStatus.DONE for job in jobs for r in job.results)
    assert [len(lines) for lines in world.server.uploads.values()] == [3, 2]
    assert world.server.answered_requests() == 3  # each domain answered (and billed) once


@pytest.mark.parametrize("script", [Script(over_token_limit=3)])
async def test_batches_over_the_enqueued_token_limit_wait_without_counting_attempts(world: World) -> None:
    job_ids = await world.submit("acme.com", "beta.org")
    [job] = await world.until_finished(job_ids)
    assert [r.status for r in job.results] == [ResultStatus.DONE, ResultStatus.DONE]  # not failed after 3
    assert len(world.server.created) == 4  # three over the limit, one per round, then one that ran
    assert world.server.answered_requests() == 2


@pytest.mark.parametrize("script", [Script(fail={"cpg/beta.org"})])
async def test_a_request_failing_in_every_batch_fails_its_domain_alone(world: World) -> None:
    job_ids = await world.submit("acme.com", "beta.org")
    [job] = await world.until_finished(job_ids)
    assert job.status is JobStatus.DONE
    failed = job.result_for("beta.org")
    assert failed.status is ResultStatus.FAILED and failed.error is not None
    assert "gave no answer in 3 batches: HTTP 500" in failed.error
    assert [len(lines) for lines in world.server.uploads.values()] == [2, 1, 1]


async def test_a_batch_created_before_a_crash_is_found_by_its_metadata(world: World) -> None:
    job_ids = await world.submit("acme.com")
    crashing = world.rounds()
    real_create = world.provider.create

    async def create_then_die(provider_batch_id: str, input_file_id: str) -> Any:
        await real_create(provider_batch_id, input_file_id)
        raise asyncio.CancelledError  # the worker is gone before it records the batch id

    world.provider.create = create_then_die  # type: ignore[method-assign]
    with pytest.raises(asyncio.CancelledError):
        await provider_batch_round(crashing)
    world.provider.create = real_create  # type: ignore[method-assign]
    await world.stores.leases.release("(provider batches)", "", crashing.holder)  # as its lease would lapse
    [job] = await world.until_finished(job_ids)
    assert job.status is JobStatus.DONE
    assert len(world.server.created) == 1 and len(world.server.uploads) == 1
    assert ("GET", "/v1/batches") in world.server.requests  # looked up by its metadata


async def test_refresh_asks_again_about_old_answers_only(world: World) -> None:
    now = datetime.now(timezone.utc)
    for domain, days in (("old.com", 55), ("recent.com", 5)):
        old = Answer(domain=domain, classifier="cpg", status=ResultStatus.DONE, source=Source.LLM, answer=False,
                     confidence=5, answered_at=now - timedelta(days=days),
                     prompt_version=world.catalog["cpg"].prompt_version)
        await world.stores.store.save_result("no-such-job", DomainResult(domain=domain), old)  # the cache only
    queue = InMemoryQueue("work", visibility_timeout=30, max_receives=None)
    batch = await refresh_stale_answers("cpg", timedelta(days=50), catalog=world.catalog,
                                        questions=world.stores.questions, job_size=2, max_domains=10,
                                        intake=RecordBatchThenPublish(world.stores.batches, world.stores.store, queue))
    assert batch is not None and batch.accepted == 1
    stored = await world.stores.batches.get_batch(batch.id)
    assert stored is not None and stored.refresh and stored.mode is BatchMode.ECONOMY
    [message] = await queue.receive(max_messages=10)
    job_id = job_id_of(message)
    assert job_id is not None
    await process_job(job_id, world.jobs)
    [job] = await world.until_finished([job_id])
    assert [(r.domain, r.status, r.answer) for r in job.results] == [("old.com", ResultStatus.DONE, True)]
    refreshed = await world.stores.store.get_answers(["old.com", "recent.com"], "cpg")
    assert refreshed["old.com"].answer is True and refreshed["recent.com"].answer is False


async def test_deleting_a_batch_whose_questions_wait_sends_none_of_them(world: World) -> None:
    job_ids = await world.submit("acme.com", "beta.org", "gamma.net")
    assert await world.stores.batches.cancel(world.batch_ids[0], NOW) == 2  # both jobs waited (RUNNING)
    jobs = [await world.stores.store.get_job(job_id) for job_id in job_ids]
    assert {(job.status, job.error) for job in jobs if job is not None} == {(JobStatus.FAILED, BATCH_CANCELLED_WAITING)}
    counts = await world.stores.batches.counts(world.batch_ids[0])
    assert (counts.cancelled, counts.pending) == (3, 0)
    assert not await world.stores.batches.has_unfinished_jobs(world.batch_ids[0])
    await provider_batch_round(world.rounds())
    assert world.server.created == [] and world.server.uploads == {}  # nothing paid for
    assert await world.stores.questions.unsent(10) == []


async def test_a_question_another_batch_waits_for_still_goes_out(world: World) -> None:
    await world.submit("acme.com", "beta.org")
    [kept] = await world.submit("acme.com")
    assert await world.stores.batches.cancel(world.batch_ids[0], NOW) == 1
    [job] = await world.until_finished([kept])
    assert [(r.domain, r.status) for r in job.results] == [("acme.com", ResultStatus.DONE)]
    [lines] = world.server.uploads.values()
    assert [line["custom_id"] for line in lines] == ["cpg/acme.com"]  # beta.org never went out


async def test_a_question_already_sent_is_answered_into_the_cache_only(world: World) -> None:
    [job_id] = await world.submit("acme.com")
    await provider_batch_round(world.rounds())  # the question goes out in a provider batch
    assert len(world.server.created) == 1
    assert await world.stores.batches.cancel(world.batch_ids[0], NOW) == 1
    for _ in range(3):
        await provider_batch_round(world.rounds())
    job = await world.stores.store.get_job(job_id)
    assert job is not None and (job.status, job.error) == (JobStatus.FAILED, BATCH_CANCELLED_WAITING)
    assert world.finished == []  # no reply for a job its caller cancelled
    cached = await world.stores.store.get_answers(["acme.com"], "cpg")
    assert cached["acme.com"].status is ResultStatus.DONE  # paid for, so kept for the next ask
    assert world.server.answered_requests() == 1


class HeldSearch(StaticSearch):
    """StaticSearch that tells `started` of each domain it is asked about, then holds the search
    until `go` is set: the test decides what lands while a job is between its searches and its
    questions."""

    def __init__(self) -> None:
        super().__init__()
        self.started: asyncio.Queue[str] = asyncio.Queue()
        self.go = asyncio.Event()

    async def gather(self, domain: str) -> list[Any]:
        self.started.put_nowait(domain)
        await self.go.wait()
        return await super().gather(domain)


async def test_a_cancel_while_the_job_runs_sends_none_of_its_questions(world: World) -> None:
    """Issue 27, item 6: DELETE lands while the job searches, before it defers its questions."""
    now = datetime.now(timezone.utc)
    cached = Answer(domain="acme.com", classifier="cpg", status=ResultStatus.DONE, source=Source.LLM, answer=True,
                    confidence=5, answered_at=now, prompt_version=world.catalog["cpg"].prompt_version)
    await world.stores.store.save_result("no-such-job", DomainResult(domain="acme.com"), cached)  # the cache only
    search = HeldSearch()
    answered = asyncio.Event()
    world.jobs.search = search
    world.jobs.on_result = lambda result: answered.set()
    [job_id] = await world.record("acme.com", "beta.org", "gamma.net", "delta.io", "epsilon.dev", job_size=5)
    running = asyncio.create_task(process_job(job_id, world.jobs))
    await asyncio.wait_for(answered.wait(), 30)  # acme.com, from the cache
    started = {await asyncio.wait_for(search.started.get(), 30) for _ in range(4)}
    assert started == {"beta.org", "gamma.net", "delta.io", "epsilon.dev"}

    assert await world.stores.batches.cancel(world.batch_ids[0], NOW) == 1  # the running job is stopped
    counts = await world.stores.batches.counts(world.batch_ids[0])
    assert (counts.done, counts.cancelled, counts.pending) == (1, 4, 0)
    assert not await world.stores.batches.has_unfinished_jobs(world.batch_ids[0])
    search.go.set()
    job = await asyncio.wait_for(running, 30)
    assert job is not None and (job.status, job.error) == (JobStatus.FAILED, BATCH_CANCELLED_RUNNING)
    assert [(r.domain, r.status) for r in job.results] == [
        ("acme.com", ResultStatus.DONE), ("beta.org", ResultStatus.PENDING), ("gamma.net", ResultStatus.PENDING),
        ("delta.io", ResultStatus.PENDING), ("epsilon.dev", ResultStatus.PENDING)]  # answered before: kept

    for _ in range(2):
        await provider_batch_round(world.rounds())
    assert world.server.requests == []  # not one request to the provider: nothing paid for
    assert await world.stores.questions.unsent(10) == []
    counts = await world.stores.batches.counts(world.batch_ids[0])
    assert (counts.done, counts.cancelled, counts.pending) == (1, 4, 0)


async def test_a_question_in_a_provider_batch_not_yet_uploaded_is_never_sent(world: World) -> None:
    [job_id] = await world.submit("acme.com")
    real_upload = world.provider.upload

    async def unreachable(provider_batch_id: str, questions: Any) -> str:
        raise ProviderError("batch API POST /files: connection refused", retryable=True)

    world.provider.upload = unreachable  # type: ignore[method-assign]
    with pytest.raises(ProviderError):
        await provider_batch_round(world.rounds())  # recorded in a provider batch, then the upload failed
    world.provider.upload = real_upload  # type: ignore[method-assign]
    assert len(await world.stores.questions.provider_batches_in_flight()) == 1
    assert await world.stores.batches.cancel(world.batch_ids[0], NOW) == 1
    for _ in range(2):
        await provider_batch_round(world.rounds())
    assert world.server.requests == []  # the provider is back: still nothing goes out
    assert await world.stores.questions.provider_batches_in_flight() == []
    job = await world.stores.store.get_job(job_id)
    assert job is not None and (job.status, job.error) == (JobStatus.FAILED, BATCH_CANCELLED_WAITING)


async def test_a_job_of_a_batch_cancelled_without_it_records_no_question_and_ends(world: World) -> None:
    """A cancel by an earlier version left running jobs alone: the job's first question ends it."""
    [job_id] = await world.record("acme.com", "beta.org", job_size=2)
    if isinstance(world.stores.batches, InMemoryBatches):
        batch = world.stores.batches.batches[world.batch_ids[0]]
        world.stores.batches.batches[batch.id] = replace(batch, cancelled_at=NOW)
    else:
        with world.stores.batches.engine.begin() as conn:
            conn.execute(update(batches).where(batches.c.id == world.batch_ids[0]).values(cancelled_at=NOW.timestamp()))
    job = await process_job(job_id, world.jobs)
    assert job is not None and (job.status, job.error) == (JobStatus.FAILED, BATCH_CANCELLED_RUNNING)
    await provider_batch_round(world.rounds())
    assert world.server.requests == [] and await world.stores.questions.unsent(10) == []
    counts = await world.stores.batches.counts(world.batch_ids[0])
    assert (counts.cancelled, counts.pending) == (2, 0)


@pytest.mark.parametrize("backend_container", ["postgresql"], indirect=True)
async def test_a_cancel_waits_for_another_batch_deferring_the_same_question(world: World) -> None:
    """PostgreSQL: the cancel forgets an unsent question no other job waits for; another batch's
    job writing its waiter for that question at that moment holds the question's row, so the
    cancel waits and sees it, instead of leaving that job waiting for a question that is gone."""
    await world.submit("acme.com")
    [other] = await world.record("acme.com")
    engine = world.stores.batches.engine
    waiter_written, release = threading.Event(), threading.Event()

    def hold_after_the_waiter(conn: Any, clause: Any, *args: Any) -> None:
        if clause is ADD_WAITER:
            waiter_written.set()
            release.wait(30)

    event.listen(engine, "after_execute", hold_after_the_waiter)
    try:
        processing = asyncio.create_task(process_job(other, world.jobs))
        await asyncio.to_thread(waiter_written.wait, 30)  # its transaction is open, the waiter unseen
        cancelling = asyncio.create_task(world.stores.batches.cancel(world.batch_ids[0], NOW))
        with engine.connect() as conn:
            lock_waits = text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                              " AND wait_event_type = 'Lock'")
            for _ in range(3000):  # until the cancel waits for a lock (the fix) or is done (without it)
                waiting = conn.execute(lock_waits).scalar()
                conn.rollback()  # pg_stat_activity is read once per transaction
                if waiting or cancelling.done():
                    break
                await asyncio.sleep(0.01)
        release.set()
        assert await asyncio.wait_for(cancelling, 30) == 1
        await asyncio.wait_for(processing, 30)
    finally:
        release.set()
        event.remove(engine, "after_execute", hold_after_the_waiter)
    [job] = await world.until_finished([other])
    assert [(r.domain, r.status) for r in job.results] == [("acme.com", ResultStatus.DONE)]
