"""A job paused by a spend limit says so: the pause recorded on a PENDING job, shown by the job's
document and its batch's progress, and cleared when the job's status is next set; the same on the
in-memory store, SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta, timezone

import pytest

from firmsift.domain.batch_documents import progress_document
from firmsift.domain.batches import Batch, BatchPlan, InputRow
from firmsift.domain.budgets import BudgetExhausted, JobPause, window_of
from firmsift.domain.job_document import job_document
from firmsift.domain.model import Job, JobStatus
from firmsift.domain.normalize import normalize_domain

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


def pause(minutes: float, scope: str = "key") -> JobPause:
    refusal = BudgetExhausted(scope, 5.0, 5.25, window_of(NOW), NOW)
    return JobPause.of(refusal, NOW + timedelta(minutes=minutes), recheck_seconds=300)


async def test_a_paused_job_says_which_limit_and_until_when_until_it_runs_again(batches) -> None:
    store = batches.store
    await store.create_job(Job(id="j1", classifier="cpg", status=JobStatus.PENDING, created_at=NOW, domains=("a.com",)))
    await store.record_pause("j1", pause(0))
    document = job_document(await store.get_job("j1"))
    assert document["status"] == "PENDING"
    assert {k: v for k, v in document["paused"].items() if k != "message"} == {
        "reason": "budget_exhausted", "limit": "key", "limit_usd": 5.0, "spent_usd": 5.25,
        "paused_at": "2026-11-29T12:00:00+00:00", "resets_at": "2026-11-30T00:00:00+00:00",
        "next_check_at": "2026-11-29T12:05:00+00:00"}
    assert await store.set_job_status("j1", JobStatus.RUNNING, only_from=(JobStatus.PENDING,))
    assert (await store.get_job("j1")).pause is None  # running again: no longer paused
    await store.record_pause("j1", pause(1))  # a job no longer PENDING is not marked
    assert (await store.get_job("j1")).pause is None


async def test_a_batch_shows_its_latest_pause_and_how_many_jobs_wait(batches) -> None:
    ids = (f"b1-job{i}" for i in itertools.count())
    rows = (InputRow(i, None, json.dumps(v), v) for i, v in enumerate(["a.com", "b.com", "c.com"]))
    batch = await batches.record(BatchPlan(Batch(id="b1", classifier="cpg", created_at=NOW), rows,
                                           read_domain=normalize_domain, job_size=1, max_domains=10,
                                           new_job_id=lambda: next(ids)))
    assert progress_document(batch, await batches.counts("b1"), NOW)["paused"] is None
    await batches.store.record_pause("b1-job0", pause(0))
    await batches.store.record_pause("b1-job1", pause(2, "global"))
    paused = progress_document(batch, await batches.counts("b1"), NOW)["paused"]
    assert (paused["jobs"], paused["limit"], paused["next_check_at"]) == (2, "global", "2026-11-29T12:07:00+00:00")
    assert paused["message"].startswith("paused: the service's global daily spend limit of 5 USD was reached")
    await batches.store.set_job_status("b1-job1", JobStatus.RUNNING)
    paused = progress_document(batch, await batches.counts("b1"), NOW)["paused"]
    assert (paused["jobs"], paused["limit"]) == (1, "key")
