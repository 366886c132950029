"""The OpenAI batch client against the scripted batch server: the requests it writes, a batch found
by its metadata across pages of the list, errors as ProviderError (retryable or not), and a batch
the provider refuses failing its questions after the last attempt instead of blocking each round."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.llm.openai_batches import OpenAIBatches
from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.economy import InMemoryDeferredQuestions
from firmsift.adapters.memory.leases import InMemoryLeases
from firmsift.adapters.memory.providers import FixedPricing
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.batches import Batch
from firmsift.domain.clock import utc_now
from firmsift.domain.economy import DeferredQuestion, ProviderBatch, ProviderBatchStatus, Question
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Answer, Job, JobStatus, ResultStatus, Source
from firmsift.services.provider_batches import ProviderBatchDependencies, provider_batch_round
from tests.support.fake_openai_batch_server import FakeOpenAIBatchServer, Script

pytestmark = pytest.mark.anyio


def question(domain: str) -> DeferredQuestion:
    return DeferredQuestion(Question("system", f"domain: {domain}", {"title": "answer", "type": "object"}, "m"),
                            Answer(domain=domain, classifier="cpg", status=ResultStatus.PENDING,
                                   answered_at=utc_now(), source=Source.LLM))


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeOpenAIBatchServer, OpenAIBatches]]:
    server = FakeOpenAIBatchServer()
    async with httpx.AsyncClient() as client:
        with server:
            yield server, OpenAIBatches(client, server.base_url, "sk-test", model="gpt-test", max_tokens=300)


async def test_a_batch_is_found_by_its_metadata_across_pages(served: tuple[FakeOpenAIBatchServer, OpenAIBatches]) -> None:
    server, client = served
    file_id = await client.upload("ours", [question("acme.com")])
    created = await client.create("ours", file_id)
    for number in range(150):  # newer batches push ours to the second page of the list
        await client.create(f"other-{number}", await client.upload(f"other-{number}", [question("x.com")]))
    found = await client.find("ours")
    assert found is not None and found.batch_id == created.batch_id and found.input_file_id == file_id
    assert await client.find("never-created") is None
    [line] = server.uploads[file_id]
    assert line["body"]["max_tokens"] == 300 and line["body"]["messages"][1]["content"] == "domain: acme.com"


async def test_errors_are_provider_errors(served: tuple[FakeOpenAIBatchServer, OpenAIBatches]) -> None:
    _server, client = served
    with pytest.raises(ProviderError, match="HTTP 404: No batch found") as missing:
        await client.retrieve(ProviderBatch(id="x", status=ProviderBatchStatus.VALIDATING, batch_id="batch_nope"))
    assert not missing.value.retryable
    with pytest.raises(ProviderError, match="No such File object") as refused:
        await client.create("ours", "file-nope")
    assert not refused.value.retryable
    async with httpx.AsyncClient() as other:
        gone = OpenAIBatches(other, "http://127.0.0.1:9/v1", None, model="m", max_tokens=10)
        with pytest.raises(ProviderError) as unreachable:
            await gone.lines("file-1")
    assert unreachable.value.retryable


async def test_a_refused_batch_fails_its_questions_after_the_last_attempt(
        served: tuple[FakeOpenAIBatchServer, OpenAIBatches]) -> None:
    server, client = served
    store = InMemoryStore()
    batches = InMemoryBatches(store)
    questions = InMemoryDeferredQuestions(batches)
    await store.create_job(Job(id="job-1", classifier="cpg", status=JobStatus.RUNNING, created_at=utc_now(),
                               domains=("acme.com",)))
    batches.batches["b"] = Batch(id="b", classifier="cpg", created_at=utc_now())
    await questions.defer(question("acme.com"), "job-1")

    real_create = client.create

    async def refuse(provider_batch_id: str, input_file_id: str) -> ProviderBatch:
        return await real_create(provider_batch_id, "file-that-does-not-exist")  # the provider answers 404

    client.create = refuse  # type: ignore[method-assign]
    finished: list[str] = []

    async def on_finished(job: Job) -> None:
        finished.append(job.id)

    deps = ProviderBatchDependencies(questions=questions, provider=client, jobs=store, catalog=load_catalog(),
                                     pricing=FixedPricing(0.5, 1.0), model="gpt-test", leases=InMemoryLeases(),
                                     on_job_finished=on_finished)
    await asyncio.wait_for(provider_batch_round(deps), 30)
    job = await store.get_job("job-1")
    assert job is not None and job.status is JobStatus.FAILED and finished == ["job-1"]
    assert job.results[0].error is not None and "refused by the provider" in job.results[0].error
    assert len(server.uploads) == 3 and server.created == []  # three attempts, then the domain failed


async def test_a_batch_over_the_enqueued_token_limit_reads_as_a_full_queue() -> None:
    server = FakeOpenAIBatchServer(Script(over_token_limit=1))
    async with httpx.AsyncClient() as http:
        with server:
            client = OpenAIBatches(http, server.base_url, None, model="m", max_tokens=10)
            created = await client.create("ours", await client.upload("ours", [question("acme.com")]))
            assert not created.queue_full and created.status is ProviderBatchStatus.VALIDATING
            failed = await client.retrieve(created)
    assert failed.status is ProviderBatchStatus.FAILED and failed.queue_full
    assert failed.error is not None and failed.error.startswith("token_limit_exceeded: Enqueued token limit reached")
