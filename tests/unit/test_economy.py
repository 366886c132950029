"""Economy mode on the in-memory graph: an economy job's LLM questions wait for a provider batch,
whose answers finish the job at the batch price; a missing answer is asked again, then fails."""

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest

from firmsift.adapters.memory.economy import InMemoryBatchProvider, chat_completion
from firmsift.adapters.memory.leases import InMemoryLeases
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM
from firmsift.domain.batches import Batch
from firmsift.domain.economy import BatchMode, DeferredQuestion
from firmsift.domain.model import Job, JobStatus, ResultStatus, Source
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.services.process import process_job
from firmsift.services.provider_batches import ProviderBatchDependencies, provider_batch_round

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "Makes and sells packaged snacks"}'
NORMAL = FixedPricing(1.0, 2.0)  # USD per million tokens
BATCH = FixedPricing(0.5, 1.0)  # what the batch price of NORMAL is


def completion(text: str = YES) -> dict[str, Any]:
    return chat_completion(text, prompt_tokens=1000, completion_tokens=100)


class Economy:
    """The in-memory graph (in_memory_container): its store, batches and deferred questions, a
    worker's dependencies as the wiring builds them (economy on, at NORMAL prices, at NOW) and a
    provider batch round's, over a provider answering with `answer`."""

    def __init__(self, answer: Callable[[DeferredQuestion], dict[str, Any] | None] = lambda q: completion()) -> None:
        graph = in_memory_container()
        self.store, self.batches, self.questions = graph.store(), graph.batches(), graph.deferred_questions()
        self.provider = InMemoryBatchProvider(answer)
        self.llm = ScriptedLLM(YES)
        graph.llm.override(self.llm)
        graph.pricing.override(NORMAL)
        self.finished: list[str] = []
        catalog = graph.catalog()
        self.jobs = graph.job_dependencies(now=lambda: NOW)

        async def finished(job: Job) -> None:
            self.finished.append(job.id)

        self.rounds = ProviderBatchDependencies(
            questions=self.questions, provider=self.provider, jobs=self.store, catalog=catalog, pricing=BATCH,
            model="fake-model", leases=InMemoryLeases(), on_job_finished=finished, now=lambda: NOW)

    async def run_rounds(self, count: int = 2) -> None:
        """`count` provider batch rounds: one submits, the next reads what the provider answered."""
        for _ in range(count):
            assert await provider_batch_round(self.rounds)

    async def add_job(self, job_id: str, *domains: str, mode: BatchMode = BatchMode.ECONOMY) -> None:
        await self.store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                                        domains=domains))
        batch_id = f"batch-of-{job_id}"
        self.batches.batches[batch_id] = Batch(id=batch_id, classifier="cpg", created_at=NOW, mode=mode)
        self.batches.job_batch[job_id] = batch_id


async def test_an_economy_job_waits_for_the_provider_batch_and_pays_the_batch_price() -> None:
    economy = Economy()
    await economy.add_job("job-1", "a.com", "b.com")
    job = await process_job("job-1", economy.jobs)
    assert job is not None and job.status is JobStatus.RUNNING  # its message is done with; the job waits
    assert [r.status for r in job.results] == [ResultStatus.PENDING, ResultStatus.PENDING]
    assert economy.llm.history == []  # nothing asked at the normal price
    await economy.run_rounds(1)
    assert economy.provider.calls == ["upload", "create"] and economy.finished == []
    await economy.run_rounds(1)
    job = await economy.store.get_job("job-1")
    assert job is not None and job.status is JobStatus.DONE and economy.finished == ["job-1"]
    assert [(r.answer, r.source, r.cost_usd) for r in job.results] == [(True, Source.LLM, 0.0006)] * 2
    assert NORMAL.cost("fake-model", 1000, 100) == 0.0012  # the same call at the normal price: twice that
    assert economy.provider.calls == ["upload", "create", "retrieve", "lines"]
    cached = await economy.store.get_answers(["a.com"], "cpg")
    assert cached["a.com"].status is ResultStatus.DONE and cached["a.com"].evidence  # the evidence it was asked with


async def test_a_standard_batch_asks_at_once() -> None:
    economy = Economy()
    await economy.add_job("job-1", "a.com", mode=BatchMode.STANDARD)
    job = await process_job("job-1", economy.jobs)
    assert job is not None and job.status is JobStatus.DONE and len(economy.llm.history) == 1
    assert economy.questions.questions == {}


async def test_two_jobs_share_one_question_and_the_first_pays() -> None:
    economy = Economy()
    await economy.add_job("job-1", "a.com")
    await economy.add_job("job-2", "a.com", "b.com")
    await process_job("job-1", economy.jobs)
    await process_job("job-2", economy.jobs)
    await process_job("job-1", economy.jobs)  # a redelivery waits once
    assert sorted(economy.questions.questions) == ["cpg/a.com", "cpg/b.com"]
    await economy.run_rounds()
    first, second = await economy.store.get_job("job-1"), await economy.store.get_job("job-2")
    assert first is not None and second is not None
    assert [(r.source, r.cost_usd) for r in first.results] == [(Source.LLM, 0.0006)]
    assert [(r.domain, r.source, r.cost_usd) for r in second.results] == [
        ("a.com", Source.CACHE, 0.0), ("b.com", Source.LLM, 0.0006)]
    assert len(economy.provider.inputs["file-1"]) == 2


async def test_a_missing_answer_is_asked_again_in_the_next_batch() -> None:
    dropped = {"cpg/b.com"}
    economy = Economy(lambda q: None if q.custom_id in dropped else completion())
    await economy.add_job("job-1", "a.com", "b.com")
    await process_job("job-1", economy.jobs)
    await economy.run_rounds()
    job = await economy.store.get_job("job-1")
    assert job is not None and job.status is JobStatus.RUNNING
    assert [r.status for r in job.results] == [ResultStatus.DONE, ResultStatus.PENDING]
    dropped.clear()
    await economy.run_rounds()
    job = await economy.store.get_job("job-1")
    assert job is not None and job.status is JobStatus.DONE
    assert [len(economy.provider.inputs[f]) for f in sorted(economy.provider.inputs)] == [2, 1]  # only what was missing


async def test_a_question_never_answered_fails_after_the_last_attempt() -> None:
    economy = Economy(lambda q: None)
    await economy.add_job("job-1", "a.com")
    await process_job("job-1", economy.jobs)
    await economy.run_rounds(economy.rounds.max_attempts * 2)
    job = await economy.store.get_job("job-1")
    assert job is not None and job.status is JobStatus.FAILED and economy.finished == ["job-1"]
    assert job.results[0].error is not None and "gave no answer in 3 batches" in job.results[0].error


async def test_unreadable_output_fails_its_domain_and_keeps_the_cost() -> None:
    economy = Economy(lambda q: completion("not json at all"))
    await economy.add_job("job-1", "a.com")
    await process_job("job-1", economy.jobs)
    await economy.run_rounds()
    job = await economy.store.get_job("job-1")
    assert job is not None and job.status is JobStatus.FAILED
    assert job.results[0].error is not None and job.results[0].error.startswith("unreadable model output")
    assert job.results[0].cost_usd == 0.0006


async def test_a_batch_created_before_a_crash_is_found_not_created_again() -> None:
    economy = Economy()
    await economy.add_job("job-1", "a.com")
    await process_job("job-1", economy.jobs)
    real_update = economy.questions.update_provider_batch
    updates = 0

    async def crash_after_the_upload_is_recorded(batch: Any) -> None:
        nonlocal updates
        updates += 1
        if updates == 2:  # the create was made, but its batch id never recorded
            raise RuntimeError("killed")
        await real_update(batch)

    economy.questions.update_provider_batch = crash_after_the_upload_is_recorded  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await provider_batch_round(economy.rounds)
    economy.questions.update_provider_batch = real_update  # type: ignore[method-assign]
    await economy.run_rounds()
    assert economy.provider.calls.count("create") == 1 and economy.provider.calls.count("upload") == 1
    assert "find" in economy.provider.calls
    job = await economy.store.get_job("job-1")
    assert job is not None and job.status is JobStatus.DONE


async def test_one_worker_at_a_time_runs_provider_batches() -> None:
    economy = Economy()
    assert await economy.rounds.leases.acquire("(provider batches)", "", "someone else", 60)
    assert not await provider_batch_round(economy.rounds)


def test_output_and_error_lines_read_as_the_provider_writes_them() -> None:
    from pathlib import Path

    from firmsift.domain.economy import read_result_line

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "openai-batch"
    output = read_result_line((folder / "output-line.json").read_text())
    assert output is not None and output.completion is not None
    assert (output.custom_id, output.completion.text, output.completion.prompt_tokens) == (
        "request-2", "2 + 2 equals 4.", 24)
    expired = read_result_line((folder / "error-line-expired.json").read_text())
    assert expired is not None and expired.completion is None
    assert expired.error is not None and expired.error.startswith("batch_expired: This request could not")
    refused = read_result_line((folder / "error-line-failed-request.json").read_text())
    assert refused is not None and refused.error == "HTTP 400: Invalid 'max_tokens': integer below minimum value."
    assert read_result_line("not json") is None and read_result_line(json.dumps({"custom_id": 3})) is None
