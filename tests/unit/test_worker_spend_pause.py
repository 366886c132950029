"""A job whose owner is over a daily spend limit pauses, not fails: its free domains (known
companies, cached answers) are served, the rest stay PENDING, and its message comes back at the
re-check interval without ever being dead-lettered; after the reset the job finishes."""

import json
import math
from datetime import datetime, timedelta, timezone

import pytest
from dependency_injector import providers

from firmsift.adapters.memory.providers import ScriptedLLM
from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.domain.job_document import job_document
from firmsift.domain.model import DomainResult, Job, JobStatus, KnownCompany, ResultStatus, Source
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.services.budgets import Budgets, set_daily_limit
from firmsift.services.keys import create_key
from tests.support.queue_backends import FakeClock

pytestmark = pytest.mark.anyio
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Snacks."}'
RECHECK = 300


@pytest.fixture
async def setup():
    clock = FakeClock()
    days = [0.0]  # how far the budgets' clock is ahead of real time
    container = in_memory_container(Settings(wait_time=0, budget_recheck_seconds=RECHECK, visibility_timeout=30))
    llm = ScriptedLLM(YES)
    container.llm.override(llm)
    # max_receives 2: the tightest setting a pause works with.
    container.work_queue.override(InMemoryQueue("jobs", visibility_timeout=30, max_receives=2, clock=clock))
    container.budgets.override(providers.Singleton(
        Budgets, container.store, container.api_keys, None,
        now=lambda: datetime.now(timezone.utc) + timedelta(days=days[0])))
    store, keys, queue = container.store(), container.api_keys(), container.work_queue()
    key = (await create_key("team", [], keys, daily_limit_usd=0.01)).record
    # Today the key's jobs already spent 0.02 USD.
    await store.create_job(Job(id="earlier", classifier="cpg", status=JobStatus.RUNNING, owner=key.id,
                               created_at=datetime.now(timezone.utc), domains=("old.com",)))
    await store.save_result("earlier", DomainResult("old.com", ResultStatus.DONE, cost_usd=0.02), None)
    await store.upsert_known([KnownCompany("known.com", "Known Foods")])
    await store.create_job(Job(id="job-1", classifier="cpg", status=JobStatus.PENDING, owner=key.id,
                               created_at=datetime.now(timezone.utc), domains=("known.com", "new.com")))
    await queue.send(json.dumps({"job_id": "job-1"}), group_id="job-1", dedup_id="job-1")
    return container, store, keys, key, queue, clock, llm, days


async def handle_next(container, queue) -> int:
    """Receive one message, handle it; its receive count (0: none was visible)."""
    messages = await queue.receive()
    if not messages:
        return 0
    await container.worker().handle(messages[0])
    return messages[0].receive_count


async def test_a_paused_job_serves_free_domains_comes_back_and_is_never_dead_lettered(setup) -> None:
    container, store, _keys, _key, queue, clock, llm, days = setup
    assert await handle_next(container, queue) == 1
    job = await store.get_job("job-1")
    assert job.status is JobStatus.PENDING and llm.history == []
    assert job.result_for("known.com").source is Source.KNOWN_COMPANY
    assert job.result_for("new.com").status is ResultStatus.PENDING
    assert await queue.approximate_counts() == {"visible": 0, "in_flight": 1}
    # GET says why the job waits and until when: the key's limit, its reset, the next look at it.
    paused = job_document(job)["paused"]
    assert (paused["reason"], paused["limit"], paused["limit_usd"], paused["spent_usd"]) == (
        "budget_exhausted", "key", 0.01, 0.02)
    at, resets, check = (datetime.fromisoformat(paused[k]) for k in ("paused_at", "resets_at", "next_check_at"))
    assert resets.time() == datetime.min.time() and check <= resets  # midnight UTC; looked at again by then
    assert check - at == timedelta(seconds=min(RECHECK, math.ceil((resets - at).total_seconds())))
    assert paused["message"].startswith("paused: the API key's daily spend limit of 0.01 USD was reached")
    counts = []
    for _ in range(6):  # many re-checks, with max receives 2
        await clock.advance(RECHECK - 1)
        assert await queue.receive() == []  # hidden until the re-check
        await clock.advance(1)
        counts.append(await handle_next(container, queue))
        if counts[-1] == 2:  # replaced by a fresh copy, found at once and hidden
            counts.append(await handle_next(container, queue))
    assert set(counts) == {1, 2}
    assert await queue.dead_letters.approximate_counts() == {"visible": 0, "in_flight": 0}
    assert (await store.get_job("job-1")).status is JobStatus.PENDING and llm.history == []

    days[0] = 1  # the next UTC day: the limit is no longer reached
    await clock.advance(RECHECK)
    await handle_next(container, queue)
    job = await store.get_job("job-1")
    assert job.status is JobStatus.DONE and llm.calls_about("new.com") == 1
    assert job_document(job)["paused"] is None
    assert await queue.approximate_counts() == {"visible": 0, "in_flight": 0}


async def test_a_raised_limit_resumes_the_job_at_its_next_check(setup) -> None:
    container, store, keys, key, queue, clock, llm, _days = setup
    await handle_next(container, queue)
    await set_daily_limit(key.id, 5, keys)
    await clock.advance(RECHECK)
    await handle_next(container, queue)
    assert (await store.get_job("job-1")).status is JobStatus.DONE and len(llm.history) == 1
