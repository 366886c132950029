"""`firmsift refresh`: the LLM's answers older than an age go out again in one economy batch, asked
though still fresh, and come back at the batch price; the age argument reads as days."""

import argparse
from datetime import timedelta

import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.domain.errors import UnknownClassifier
from firmsift.domain.model import Answer, ResultStatus, Source
from firmsift.entrypoints.cli.refresh_command import age
from firmsift.services.batch_intake import RecordBatchThenPublish
from firmsift.services.process import process_job
from firmsift.services.refresh import refresh_stale_answers
from firmsift.adapters.memory.queue import InMemoryQueue
from tests.unit.test_economy import NOW, Economy

pytestmark = pytest.mark.anyio


def work_queue() -> InMemoryQueue:
    return InMemoryQueue("work", visibility_timeout=30, max_receives=None)


def answered(domain: str, days_ago: float, source: Source = Source.LLM,
             status: ResultStatus = ResultStatus.DONE) -> Answer:
    return Answer(domain=domain, classifier="cpg", status=status, answered_at=NOW - timedelta(days=days_ago),
                  source=source, answer=True, confidence=5, reason="old", cost_usd=0.0012,
                  prompt_version=load_catalog()["cpg"].prompt_version)


async def test_old_answers_are_asked_again_in_economy_mode_though_fresh() -> None:
    economy = Economy()
    for answer in (answered("old.com", 55), answered("older.com", 58), answered("recent.com", 10),
                   answered("failed.com", 70, status=ResultStatus.FAILED), answered("parked.com", 70, Source.PRECHECK)):
        economy.store.answers[(answer.domain, "cpg")] = answer
    queue = work_queue()
    batch = await refresh_stale_answers(
        "cpg", timedelta(days=50), catalog=load_catalog(), questions=economy.questions,
        intake=RecordBatchThenPublish(economy.batches, economy.store, queue), job_size=10, max_domains=100,
        now=lambda: NOW)
    assert batch is not None and batch.refresh and batch.mode.value == "economy" and batch.accepted == 2
    [job_id] = list(economy.batches.job_batch)
    job = await economy.store.get_job(job_id)
    assert job is not None and job.domains == ("older.com", "old.com")  # the oldest first
    await process_job(job_id, economy.jobs)
    assert sorted(economy.questions.questions) == ["cpg/old.com", "cpg/older.com"]  # fresh, and asked all the same
    await economy.run_rounds()
    job = await economy.store.get_job(job_id)
    assert job is not None and job.status.value == "DONE"
    assert [(r.source, r.cost_usd) for r in job.results] == [(Source.LLM, 0.0006)] * 2  # at the batch price
    assert economy.store.answers[("old.com", "cpg")].answered_at == NOW  # the cache holds the new answer


async def test_nothing_old_enough_submits_nothing() -> None:
    economy = Economy()
    economy.store.answers[("recent.com", "cpg")] = answered("recent.com", 10)
    assert await refresh_stale_answers(
        "cpg", timedelta(days=50), catalog=load_catalog(), questions=economy.questions,
        intake=RecordBatchThenPublish(economy.batches, economy.store, work_queue()), job_size=10,
        max_domains=100, now=lambda: NOW) is None
    with pytest.raises(UnknownClassifier):
        await refresh_stale_answers("nope", timedelta(days=50), catalog=load_catalog(), questions=economy.questions,
                                    intake=RecordBatchThenPublish(economy.batches, economy.store, work_queue()),
                                    job_size=10, max_domains=100)


def test_an_age_is_days() -> None:
    assert age("50d") == age("50") == timedelta(days=50)
    assert age("1.5d") == timedelta(days=1.5)
    for bad in ("50h", "-3d", "", "d"):
        with pytest.raises(argparse.ArgumentTypeError):
            age(bad)
