"""What answers cost, stored: the same round trips on the in-memory, SQLite and PostgreSQL stores,
and migration 7 on a database whose rows were written before costs were recorded."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import text

from firmsift.adapters.sql import migrations
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.job_document import job_document
from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, ResultStatus, Source
from tests.support.databases import SQL_BACKENDS, migrated_engine

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


def answer(domain: str, tokens_in: int | None, tokens_out: int | None, cost_usd: float | None) -> Answer:
    return Answer(domain=domain, classifier="cpg", status=ResultStatus.DONE, answered_at=NOW, source=Source.LLM,
                  answer=True, confidence=5, reason="Makes snacks.", model="m", prompt_version="v1",
                  tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost_usd)


async def test_an_answers_cost_and_the_jobs_spend_round_trip(store) -> None:
    await store.create_job(Job(id="j1", classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                               domains=("paid.com", "reused.com", "unknown.com", "pending.com")))
    # A tiny price survives whole as a double precision; a million-token context as an integer.
    paid = answer("paid.com", 1_048_576, 123_456, 0.000001234567891)
    await store.save_result("j1", DomainResult.from_answer(paid, Source.LLM, paid=True), paid)
    earlier = answer("reused.com", 900, 90, 0.5)
    await store.save_result("j1", DomainResult.from_answer(earlier, Source.CACHE, paid=False), None)
    unknown = answer("unknown.com", None, None, None)
    await store.save_result("j1", DomainResult.from_answer(unknown, Source.LLM, paid=True), unknown)

    job = await store.get_job("j1")
    spent = [(r.tokens_in, r.tokens_out, r.cost_usd) for r in job.results]
    assert spent == [(1_048_576, 123_456, 0.000001234567891), (0, 0, 0.0), (None, None, None),
                     (None, None, None)]
    of_answer = [(r.answer_tokens_in, r.answer_tokens_out, r.answer_cost_usd) for r in job.results]
    assert of_answer == [(1_048_576, 123_456, 0.000001234567891), (900, 90, 0.5), (None, None, None),
                         (None, None, None)]
    assert (await store.get_answers(["paid.com", "unknown.com"], "cpg")) == {"paid.com": paid, "unknown.com": unknown}
    assert job_document(job)["total"] == {"tokens_in": 1_048_576, "tokens_out": 123_456,
                                          "cost_usd": 0.000001234568, "cost_unknown_domains": 1}


async def test_a_repeated_answer_overwrites_its_cost(store) -> None:
    await store.create_job(Job(id="j1", classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                               domains=("a.com",)))
    for figures in ((10, 5, 0.25), (None, None, None)):
        again = answer("a.com", *figures)
        await store.save_result("j1", DomainResult.from_answer(again, Source.LLM), again)
        assert (await store.get_answers(["a.com"], "cpg"))["a.com"] == again


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_rows_stored_before_migration_7_read_as_unknown_cost(
        backend: str, tmp_path: Path) -> None:
    with migrated_engine(backend, tmp_path, to="0006") as engine:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO answers (domain, classifier, status, source, answer, confidence, reason, "
                              "evidence, answered_at) VALUES ('a.com', 'cpg', 'DONE', 'llm', TRUE, 4, 'old', '[]', 0)"))
            conn.execute(text("INSERT INTO jobs (id, classifier, status, created_at, updated_at) "
                              "VALUES ('j1', 'cpg', 'DONE', 0, 0)"))
            conn.execute(text("INSERT INTO job_domains (job_id, position, domain, status, source, answer, confidence) "
                              "VALUES ('j1', 0, 'a.com', 'DONE', 'llm', TRUE, 4)"))
        later = [m.name for m in migrations.history() if m.version >= 7]
        assert [m.name for m in migrations.upgrade(engine)] == later and later[0] == "answer_cost"
        store = SqlStore(engine)
        old = (await store.get_answers(["a.com"], "cpg"))["a.com"]
        assert (old.tokens_in, old.tokens_out, old.cost_usd) == (None, None, None)
        job = await store.get_job("j1")
        assert job.result_for("a.com").cost_usd is None and job.result_for("a.com").answer_cost_usd is None
        assert job_document(job)["total"] == {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
                                              "cost_unknown_domains": 1}
