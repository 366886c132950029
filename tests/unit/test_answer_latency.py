"""How long an answer took, as the worker stores it: its LLM call from the moment it holds a slot
(failed calls too) and the gathering of its evidence. On the virtual-time loop, with the code's
monotonic clock read from it: the durations are exact, however busy the machine."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from dependency_injector import providers

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.services import asking, evidence
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence, Job, JobStatus, ResultStatus
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.services.asking import ask_llm
from firmsift.services.process import process_job
from tests.support.virtual_time import VIRTUAL_TIME_BACKEND, loop_clock

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CPG = load_catalog()["cpg"]


@pytest.fixture
def anyio_backend() -> object:
    return VIRTUAL_TIME_BACKEND


class LoopTime:
    """The `time` module as the timed code sees it, its monotonic clock the event loop's."""

    monotonic = staticmethod(loop_clock)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.fixture(autouse=True)
def timed_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for module in (asking, evidence):
        monkeypatch.setattr(module, "time", LoopTime())
    yield


async def ask(llm: ScriptedLLM, slots: asyncio.Semaphore):
    answer, _ = await ask_llm("acme.com", CPG, [], llm, pricing=FixedPricing(1.0, 2.0), slots=slots, marker="M",
                              now=lambda: NOW)
    return answer


async def test_the_llm_time_counts_from_the_slot_taken_to_the_answer() -> None:
    slots = asyncio.Semaphore(1)
    await slots.acquire()  # another call holds the only slot for 1 s
    asyncio.get_running_loop().call_later(1.0, slots.release)
    answer = await ask(ScriptedLLM(delay=0.1), slots)
    assert answer.status is ResultStatus.DONE
    assert answer.llm_seconds == 0.1  # the second waited for the slot is not counted
    assert answer.evidence_seconds is None  # asking alone gathers no evidence


async def test_a_failed_call_records_the_time_it_held_its_slot() -> None:
    class SlowFailure(ScriptedLLM):
        async def complete(self, system: str, user: str, *, json_schema: dict) -> object:
            await asyncio.sleep(0.1)
            raise ProviderError("timed out")

    answer = await ask(SlowFailure(), asyncio.Semaphore(1))
    assert answer.status is ResultStatus.FAILED and answer.llm_seconds == 0.1


class SlowSearch(StaticSearch):
    async def gather(self, domain: str) -> list[Evidence]:
        await asyncio.sleep(0.1)
        return await super().gather(domain)


async def test_the_worker_stores_each_answers_llm_and_evidence_time_and_a_cached_answer_keeps_them() -> None:
    container = in_memory_container(Settings(precheck=False))
    container.llm.override(ScriptedLLM(delay=0.05))
    container.searches.override(providers.Object((SlowSearch(name="homepage"),)))
    store = container.store()
    for job_id in ("j1", "j2"):
        await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                                   domains=("acme.com",)))
        await process_job(job_id, container.job_dependencies(now=lambda: NOW))
    stored = store.answers[("acme.com", "cpg")]
    assert (stored.llm_seconds, stored.evidence_seconds) == (0.05, 0.1)
    assert (await container.answer_history().latency_history("cpg")).answers == 1  # j2 reused it: no new timing
