"""Economy mode end to end below HTTP, on the in-memory store, SQLite and PostgreSQL, with the real
OpenAI batch client against the scripted batch server: an economy batch's questions go out in one
provider batch and come back at the batch price; expired and failed requests are asked again,
alone; a crash between creating a batch and recording it finds the batch instead of creating
another; `firmsift refresh` asks again about old answers only."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.llm.openai_batches import OpenAIBatches
from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.economy import InMemoryDeferredQuestions
from firmsift.adapters.memory.leases import InMemoryLeases
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.deferred_questions import SqlDeferredQuestions
from firmsift.adapters.sql.leases import SqlLeases
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.batches import BATCH_CANCELLED_WAITING, Batch, BatchPlan, InputRow
from firmsift.domain.economy import BatchMode
from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, ResultStatus, Source
from firmsift.domain.normalize import normalize_domain
from firmsift.services.batch_intake import RecordBatchThenPublish
from firmsift.services.dead_letters import job_id_of
from firmsift.services.process import JobDependencies, process_job
from firmsift.services.provider_batches import ProviderBatchDependencies, provider_batch_round
from firmsift.services.refresh import refresh_stale_answers
from tests.support.databases import SQL_BACKENDS, migrated_engine
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


@pytest.fixture(params=["memory", *SQL_BACKENDS])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    if request.param == "memory":
        store = InMemoryStore()
        batches = InMemoryBatches(store)
        yield Stores(store, batches, InMemoryDeferredQuestions(batches), InMemoryLeases())
        return
    with migrated_engine(request.param, tmp_path) as engine:
        store = SqlStore(engine)
        yield Stores(store, SqlBatches(store), SqlDeferredQuestions(engine), SqlLeases(engine))


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
async def server(script: Script) -> AsyncIterator[FakeOpenAIBatchServer]:
    server = FakeOpenAIBatchServer(script)
    with server:
        yield server


class World:
    def __init__(self, stores: Stores, server: FakeOpenAIBatchServer, client: httpx.AsyncClient) -> None:
        self.stores = stores
        self.server = server
        self.catalog = load_catalog()
        self.finished: list[str] = []
        self.batch_ids: list[str] = []  # of the batches submitted, in order
        self._ids = (f"00000000-0000-4000-8000-{n:012d}" for n in itertools.count(1))
        self.jobs = JobDependencies(
            jobs=stores.store, answers=stores.store, known=stores.store, search=StaticSearch(), llm=ScriptedLLM(),
            pricing=FixedPricing(1.0, 2.0), catalog=self.catalog, llm_slots=asyncio.Semaphore(4),
            deferred=stores.questions)
        self.provider = OpenAIBatches(client, server.base_url, "sk-test", model="openai/gpt-test", max_tokens=400)

    def rounds(self) -> ProviderBatchDependencies:
        async def finished(job: Job) -> None:
            self.finished.append(job.id)

        return ProviderBatchDependencies(
            questions=self.stores.questions, provider=self.provider, jobs=self.stores.store, catalog=self.catalog,
            pricing=BATCH_PRICE, model="gpt-test", leases=self.stores.leases, on_job_finished=finished)

    async def submit(self, *domains: str) -> list[str]:
        """An economy batch of `domains` (two to a job), its jobs processed; their ids."""
        batch = Batch(id=next(self._ids), classifier="cpg", created_at=NOW, mode=BatchMode.ECONOMY)
        rows = [InputRow(i, None, f'"{d}"', d) for i, d in enumerate(domains)]
        plan = BatchPlan(batch, rows, read_domain=normalize_domain, job_size=2, max_domains=100,
                         new_job_id=lambda: next(self._ids))
        await self.stores.batches.record(plan)
        self.batch_ids.append(batch.id)
        for job_id in plan.job_ids:
            job = await process_job(job_id, self.jobs)
            assert job is not None and job.status is JobStatus.RUNNING
        return plan.job_ids

    async def until_finished(self, job_ids: list[str], rounds: int = 12) -> list[Job]:
        deps = self.rounds()
        for _ in range(rounds):
            await provider_batch_round(deps)
            jobs = [await self.stores.store.get_job(job_id) for job_id in job_ids]
            if all(job is not None and job.status.finished for job in jobs):
                return jobs  # type: ignore[return-value]
        raise AssertionError(f"jobs unfinished after {rounds} rounds: {jobs}")


@pytest.fixture
async def world(stores: Stores, server: FakeOpenAIBatchServer) -> AsyncIterator[World]:
    async with httpx.AsyncClient() as client:
        yield World(stores, server, client)


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
