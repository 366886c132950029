"""One repository suite, run against the in-memory store and the SQLite and PostgreSQL stores."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from firmsift.adapters.memory_store import InMemoryStore
from firmsift.adapters.sql_store import SqlStore
from firmsift.domain.model import (
    Answer,
    DomainResult,
    Evidence,
    Job,
    JobStatus,
    KnownCompany,
    ResultStatus,
    Source,
)
from tests.support.databases import SQL_BACKENDS, migrated_engine

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture(params=["memory", *SQL_BACKENDS])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[object]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    with migrated_engine(request.param, tmp_path) as engine:
        yield SqlStore(engine)


def job(job_id: str = "j1", *domains: str) -> Job:
    return Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
               domains=domains or ("a.com", "b.com"), reply_queue="replies")


def answer(domain: str, **changes: object) -> Answer:
    values: dict[str, object] = dict(
        domain=domain, classifier="cpg", status=ResultStatus.DONE, answered_at=NOW, source=Source.LLM,
        answer=True, confidence=4, reason="Makes snacks.",
        evidence=(Evidence("https://a.com/about", "About", "snacks"),), raw_output='{"is_cpg": true}',
        model="m", prompt_version="v1",
    )
    values.update(changes)
    return Answer(**values)  # type: ignore[arg-type]


async def test_a_new_job_has_every_domain_pending_in_order(store) -> None:
    await store.create_job(job("j1", "b.com", "a.com", "c.com"))
    stored = await store.get_job("j1")
    assert stored.status is JobStatus.PENDING and stored.reply_queue == "replies"
    assert stored.domains == ("b.com", "a.com", "c.com")
    assert [(r.domain, r.status) for r in stored.results] == [(d, ResultStatus.PENDING) for d in stored.domains]
    assert stored.created_at == NOW


async def test_unknown_job_is_none(store) -> None:
    assert await store.get_job("missing") is None


async def test_results_and_answers_round_trip(store) -> None:
    await store.create_job(job())
    given = answer("a.com")
    await store.save_result("j1", DomainResult.from_answer(given, Source.LLM), given)
    stored = await store.get_job("j1")
    assert stored.result_for("a.com") == DomainResult.from_answer(given, Source.LLM)
    assert stored.result_for("b.com").status is ResultStatus.PENDING
    assert (await store.get_answers(["a.com", "b.com"], "cpg")) == {"a.com": given}
    assert (await store.get_answers(["a.com"], "other")) == {}


async def test_answers_upsert_on_domain_and_classifier(store) -> None:
    await store.create_job(job())
    for attempt in (answer("a.com", confidence=2), answer("a.com", status=ResultStatus.FAILED, answer=None,
                                                           confidence=None, error="boom")):
        await store.save_result("j1", DomainResult.from_answer(attempt, Source.LLM), attempt)
    stored = (await store.get_answers(["a.com"], "cpg"))["a.com"]
    assert stored.status is ResultStatus.FAILED and stored.error == "boom" and stored.answer is None


async def test_concurrent_upserts_of_one_domain_leave_one_row(store) -> None:
    for n in range(5):
        await store.create_job(job(f"j{n}", "same.com"))
    await asyncio.gather(*(
        store.save_result(f"j{n}", DomainResult.from_answer(answer("same.com", confidence=1 + n), Source.LLM),
                          answer("same.com", confidence=1 + n))
        for n in range(5)
    ))
    stored = await store.get_answers(["same.com"], "cpg")
    assert list(stored) == ["same.com"]


async def test_job_status_and_reply_are_recorded(store) -> None:
    await store.create_job(job())
    await store.set_job_status("j1", JobStatus.FAILED, error="dead-lettered")
    await store.record_reply("j1", sent=False, error="queue missing")
    stored = await store.get_job("j1")
    assert (stored.status, stored.error, stored.reply_sent, stored.reply_error) == (
        JobStatus.FAILED, "dead-lettered", False, "queue missing")
    await store.record_reply("j1", sent=True, error=None)
    assert (await store.get_job("j1")).reply_sent is True


async def test_known_companies_upsert_idempotently(store) -> None:
    assert await store.upsert_known([KnownCompany("a.com", "A"), KnownCompany("b.com", "")]) == 2
    assert await store.upsert_known([KnownCompany("a.com", "A Inc")]) == 1
    found = await store.find_known(["a.com", "b.com", "c.com"])
    assert found == {"a.com": KnownCompany("a.com", "A Inc"), "b.com": KnownCompany("b.com", "")}
    assert await store.find_known([]) == {}
