"""A job paused by a spend limit on every work-queue adapter (in-memory, SQLite, PostgreSQL, the SQS
emulator) with max receives 2: its message keeps coming back at the re-check and never reaches the
dead-letter queue, however often it is paused; once the limit is raised the job finishes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from firmsift.adapters.memory.providers import ScriptedLLM
from firmsift.domain.model import DomainResult, Job, JobStatus, ResultStatus
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.services.budgets import set_daily_limit
from firmsift.services.keys import create_key
from tests.support.queue_backends import BACKENDS, Backend, QueueSettings
from tests.support.sqs_emulator import sqs_emulator

pytestmark = pytest.mark.anyio
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Snacks."}'
PAUSES = 4


@pytest.fixture(scope="module")
def sqs_endpoint() -> Iterator[str]:
    with sqs_emulator() as endpoint:
        yield endpoint


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with BACKENDS[request.param](request, tmp_path) as opened_backend:
        yield opened_backend


async def test_a_paused_message_comes_back_and_is_never_dead_lettered(backend: Backend) -> None:
    recheck = backend.visibility_timeout
    opened = backend.open(QueueSettings(max_receives=2, visibility_timeout=recheck, clock=backend.clock))
    container = in_memory_container(Settings(wait_time=0, budget_recheck_seconds=recheck))
    llm = ScriptedLLM(YES)
    container.llm.override(llm)
    container.work_queue.override(opened.queue)
    container.dead_letters.override(opened.dead_letters)
    store, keys, worker = container.store(), container.api_keys(), container.worker()
    key = (await create_key("team", [], keys, daily_limit_usd=0.01)).record
    now = datetime.now(timezone.utc)
    await store.create_job(Job(id="earlier", classifier="cpg", status=JobStatus.RUNNING, owner=key.id,
                               created_at=now, domains=("old.com",)))
    await store.save_result("earlier", DomainResult("old.com", ResultStatus.DONE, cost_usd=0.02), None)
    await store.create_job(Job(id="job-1", classifier="cpg", status=JobStatus.PENDING, owner=key.id,
                               created_at=now, domains=("new.com",)))
    await opened.queue.send(json.dumps({"job_id": "job-1"}), group_id="job-1", dedup_id="job-1")

    seen = []  # the receive count of each delivery; a re-check after each pause
    for _ in range(2 * PAUSES):
        messages = await opened.queue.receive(wait_seconds=backend.margin)
        if not messages:  # hidden: it comes back after the re-check
            await backend.clock.advance(recheck + backend.margin)
            messages = await opened.queue.receive(wait_seconds=backend.margin)
        assert messages, f"the paused message did not come back (receive counts so far: {seen})"
        seen.append(messages[0].receive_count)
        await worker.handle(messages[0])
    assert set(seen) == {1, 2} and llm.history == []
    assert await opened.dead_letters.receive(wait_seconds=0) == []
    assert (await store.get_job("job-1")).status is JobStatus.PENDING

    await set_daily_limit(key.id, None, keys)
    await backend.clock.advance(recheck + backend.margin)
    [message] = await opened.queue.receive(wait_seconds=backend.margin)
    await worker.handle(message)
    assert (await store.get_job("job-1")).status is JobStatus.DONE and len(llm.history) == 1
