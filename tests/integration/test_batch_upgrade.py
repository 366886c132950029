"""A batch recorded before migrations 16 (the partial index of finished job domains) and 17 (a
batch job's domains listed on its row, their job_domains rows written with their results) streams
the same results after the upgrade, and the spend of finished domains is still read through that
index; a batch recorded at 17 keeps every domain it lists when migration 17 is undone."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.migrations import downgrade, history, upgrade
from firmsift.adapters.sql.spend import SqlSpendLedger
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.batch_results import csv_lines, json_lines
from firmsift.domain.batches import Batch, BatchPlan, InputRow
from firmsift.domain.model import DomainResult, JobStatus, ResultStatus, Source
from firmsift.domain.normalize import normalize_domain
from firmsift.services.batches import result_pages
from tests.support.databases import SQL_BACKENDS, migrated_engine

pytestmark = pytest.mark.anyio
NOW = datetime.now(timezone.utc)
NEWEST = history()[-1].version  # the revisions after 0016 and 0017 run too, whatever they are
BATCH = Batch(id="b1", classifier="cpg", created_at=NOW, owner="key_a")
VALUES = ["a.com", "https://www.b.com/x", "not a domain", "a.com", "c.com", {"site": "é.com"}]


def _plan() -> BatchPlan:
    ids = (f"b1-job{i}" for i in itertools.count())
    rows = (InputRow(i, None, json.dumps(v, ensure_ascii=False), v) for i, v in enumerate(VALUES))
    return BatchPlan(BATCH, rows, read_domain=normalize_domain, job_size=2, max_domains=100,
                     new_job_id=lambda: next(ids))


async def _lines(batches: SqlBatches, batch: Batch) -> tuple[str, str]:
    pages = [page async for page in result_pages(batch, batches, page_rows=2)]
    return "".join(json_lines(batch, page) for page in pages), "".join(csv_lines(batch, page) for page in pages)


def _plan_uses_the_index(engine: Engine) -> bool:
    query = "SELECT SUM(tokens_in) FROM job_domains WHERE finished_at >= 0 AND finished_at < 1e12"
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SET enable_seqscan = off"))  # a table this small is otherwise scanned
            plan = "\n".join(row[0] for row in conn.execute(text(f"EXPLAIN {query}")))
        else:
            plan = "\n".join(str(row[-1]) for row in conn.execute(text(f"EXPLAIN QUERY PLAN {query}")))
    return "ix_job_domains_finished_at" in plan


async def _answered(batches: SqlBatches, store: SqlStore, *, as_of_0015: bool = False) -> Batch:
    """The batch, with a.com answered and the second job dead-lettered: as the code before
    migration 17 did it (a PENDING row per domain, answered by an UPDATE of its row), or as today."""
    if as_of_0015:
        store.insert_batch_jobs_in = store.insert_jobs_in  # type: ignore[method-assign]
    batch = await batches.record(_plan())
    await store.set_job_status("b1-job0", JobStatus.RUNNING)
    if as_of_0015:
        with store.engine.begin() as conn:
            conn.execute(text("UPDATE job_domains SET status = 'DONE', source = 'llm', answer = TRUE, confidence = 5, "
                              "tokens_in = 70, finished_at = :now WHERE job_id = 'b1-job0' AND domain = 'a.com'"),
                         {"now": NOW.timestamp()})
    else:
        await store.save_result("b1-job0", DomainResult(domain="a.com", status=ResultStatus.DONE, answer=True,
                                                        confidence=5, source=Source.LLM, tokens_in=70), None)
    await store.set_job_status("b1-job1", JobStatus.FAILED, error="dead-lettered")
    return batch


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_a_batch_recorded_before_the_partial_index_streams_the_same_after_the_upgrade(
        backend: str, tmp_path: Path) -> None:
    (tmp_path / "today").mkdir()
    with migrated_engine(backend, tmp_path / "today") as today:
        store = SqlStore(today)
        batches = SqlBatches(store)
        recorded_today = await _lines(batches, await _answered(batches, store))
    with migrated_engine(backend, tmp_path, to="0015") as engine:
        store = SqlStore(engine)
        batches = SqlBatches(store)
        # Recorded as before migration 17 (today's result pages read columns 0015 does not have:
        # the batch is read after the upgrade, and must read as the same batch recorded today).
        batch = await _answered(batches, store, as_of_0015=True)
        assert [m.version for m in upgrade(engine)] == list(range(16, NEWEST + 1))
        after = await _lines(batches, batch)
        assert after == recorded_today
        assert [json.loads(line)["status"] for line in after[0].splitlines()] == [
            "DONE", "PENDING", "REJECTED", "DONE", "FAILED", "REJECTED"]
        assert _plan_uses_the_index(engine)
        spend = await SqlSpendLedger(engine).spend_between(NOW - timedelta(hours=1), NOW + timedelta(hours=1))
        assert spend.tokens_in == 70
        # Its job's next answer goes to the row written at intake, as it would have then.
        assert await store.save_result("b1-job0", DomainResult(domain="b.com", status=ResultStatus.DONE, answer=False,
                                                               confidence=4, source=Source.LLM), None)
        job = await store.get_job("b1-job0")
        assert job is not None and [(r.domain, r.status) for r in job.results] == [
            ("a.com", ResultStatus.DONE), ("b.com", ResultStatus.DONE)]


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_undoing_migration_17_writes_the_rows_a_batch_job_lists(backend: str, tmp_path: Path) -> None:
    with migrated_engine(backend, tmp_path) as engine:
        store = SqlStore(engine)
        await SqlBatches(store).record(_plan())
        await store.set_job_status("b1-job0", JobStatus.RUNNING)
        await store.save_result("b1-job0", DomainResult(domain="b.com", status=ResultStatus.DONE, answer=True,
                                                        confidence=5, source=Source.LLM, tokens_in=9), None)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM job_domains")).scalar() == 1  # only the answered one
        assert [m.version for m in downgrade(engine, "0016")] == list(range(NEWEST, 16, -1))
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT job_id, position, domain, status, reason, evidence, tokens_in "
                                     "FROM job_domains ORDER BY job_id, position")).all()
        assert [tuple(row) for row in rows] == [
            ("b1-job0", 0, "a.com", "PENDING", "", "[]", None), ("b1-job0", 1, "b.com", "DONE", "", "[]", 9),
            ("b1-job1", 0, "c.com", "PENDING", "", "[]", None)]
