"""A poison model answer on the real stores: stored cleaned (or failed alone when the database
refuses it anyway), siblings stored, the message acknowledged, and the LLM paid once however
often the message comes back."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import Engine

from firmsift.adapters.memory.providers import LLMCall, ScriptedLLM, StaticSearch
from firmsift.adapters.memory.queue import InMemoryReplyPublisher
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.model import Completion, Job, JobStatus, ResultStatus
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.settings import Settings
from tests.support.databases import SQL_BACKENDS, migrated_engine
from tests.support.postgres import postgres_engine
from tests.support.queue_backends import FakeClock

pytestmark = pytest.mark.anyio
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Snacks."}'
# A lone surrogate and a NUL, raw and as JSON escapes inside the reasoning.
POISON = '{"is_cpg": true, "confidence": 4, "reasoning": "Dips \\u0000 \\ud800 \ud800"}\x00'
MAX_RECEIVES = 5


class HeldLLM(ScriptedLLM):
    """A scripted LLM that answers about `first` at once and holds every other call, once made,
    until `release` is set: the test, not the speed of a busy machine, decides that the worker
    dies while the siblings are being asked. A held call that is cancelled still counts as
    asked (it was paid for)."""

    def __init__(self, default: str, *, by_domain: dict[str, str | Exception], first: str) -> None:
        super().__init__(default, by_domain=by_domain)
        self.first = first
        self.release = asyncio.Event()

    async def complete(self, system: str, user: str, *, json_schema: dict) -> Completion:
        if self.release.is_set() or f"Domain: {self.first}\n" in user:
            return await super().complete(system, user, json_schema=json_schema)
        self.in_flight += 1
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.history.append(LLMCall(system, user, json_schema))
            raise
        finally:
            self.in_flight -= 1
        return await super().complete(system, user, json_schema=json_schema)


class Harness:
    def __init__(self, engine: Engine, llm: HeldLLM) -> None:
        self.clock = FakeClock()
        self.queue = SqlQueue(engine, "jobs", visibility_timeout=10, max_receives=MAX_RECEIVES, clock=self.clock)
        self.store = SqlStore(engine)
        self.replies = InMemoryReplyPublisher()
        self.llm = llm
        # The production worker on this database, asking about a job's three domains at once (so
        # the siblings' held calls never keep `first` from being answered).
        container = Container(settings=Settings(precheck=False, wait_time=0, visibility_timeout=10, max_job_seconds=60, worker_jobs=1,
                                                llm_concurrency=3))
        container.override_providers(engine=engine, work_queue=self.queue, replies=self.replies, llm=llm,
                                     searches=(StaticSearch(),))
        self.worker = container.worker()

    async def submit(self, *domains: str) -> str:
        job_id = "11111111-1111-4111-8111-000000000001"
        await self.store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING,
                                        created_at=datetime.now(timezone.utc), domains=domains, reply_queue="team"))
        await self.queue.send(json.dumps({"job_id": job_id}), group_id=job_id, dedup_id=job_id)
        return job_id

    async def deliver_until_acknowledged(self) -> int:
        """Receive and handle until the queue is empty, as workers would after each visibility
        timeout (a failed delivery leaves its message to come back); how many deliveries it took."""
        deliveries = 0
        while deliveries < MAX_RECEIVES + 1:
            messages = await self.queue.receive()
            if not messages:
                counts = await self.queue.approximate_counts()
                if counts["in_flight"] == 0:
                    return deliveries
                self.clock.now += 11  # the visibility timeout passes
                continue
            deliveries += 1
            try:
                await self.worker.handle(messages[0])
            except Exception:  # noqa: BLE001 - what the worker's loop does: leave it for redelivery
                pass
        return deliveries

    async def crash_once(self, job_id: str, after_finishing: str, siblings: int = 2) -> None:
        """A delivery whose worker dies (its task cancelled) once `after_finishing` has a result
        while all its `siblings`' LLM calls are under way: the message is left to come back."""
        [message] = await self.queue.receive()
        delivery = asyncio.create_task(self.worker.handle(message))
        for _ in range(3000):
            job = await self.store.get_job(job_id)
            if job.result_for(after_finishing).status is not ResultStatus.PENDING and self.llm.in_flight == siblings:
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError(f"{after_finishing} never finished with its siblings' calls held")
        delivery.cancel()
        await asyncio.gather(delivery, return_exceptions=True)
        self.llm.release.set()
        self.clock.now += 11


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_a_poison_answer_is_stored_cleaned_and_paid_for_once(backend: str, tmp_path: Path) -> None:
    llm = HeldLLM(YES, by_domain={"poison.com": POISON}, first="poison.com")
    with migrated_engine(backend, tmp_path) as engine:
        h = Harness(engine, llm)
        job_id = await h.submit("poison.com", "a.com", "b.com")
        await h.crash_once(job_id, after_finishing="poison.com")
        assert await h.deliver_until_acknowledged() == 1
        job = await h.store.get_job(job_id)
        assert job.status is JobStatus.DONE
        assert [r.status for r in job.results] == [ResultStatus.DONE] * 3  # siblings stored too
        assert job.result_for("poison.com").reason == "Dips \ufffd \ufffd \ufffd"
        [reply] = h.replies.published
        assert json.loads(reply.body)["status"] == "DONE"
        # At least once: the same message may still come back; nothing is asked again.
        await h.queue.send(json.dumps({"job_id": job_id}), group_id=job_id, dedup_id=f"{job_id}:again")
        assert await h.deliver_until_acknowledged() == 1
        # The siblings being asked when the worker died were asked again; poison.com never.
        assert llm.calls_about("poison.com") == 1
        assert [llm.calls_about(d) for d in ("a.com", "b.com")] == [2, 2]


async def test_an_answer_the_database_refuses_fails_alone_and_is_not_asked_again() -> None:
    """On a LATIN1 PostgreSQL database an em dash cannot be stored: that domain fails with a
    clear error, its siblings are stored, and no redelivery pays for the same answer again."""
    llm = HeldLLM(YES, by_domain={"dash.com": '{"is_cpg": true, "confidence": 5, "reasoning": "Tea \u2014 coffee."}'},
                  first="dash.com")
    with postgres_engine(encoding="LATIN1") as engine:
        h = Harness(engine, llm)
        job_id = await h.submit("dash.com", "a.com", "b.com")
        await h.crash_once(job_id, after_finishing="dash.com")
        assert await h.deliver_until_acknowledged() == 1
        job = await h.store.get_job(job_id)
        assert job.status is JobStatus.DONE
        dash = job.result_for("dash.com")
        assert dash.status is ResultStatus.FAILED
        assert dash.error is not None and dash.error.startswith("the answer could not be stored: the database refused")
        assert [job.result_for(d).status for d in ("a.com", "b.com")] == [ResultStatus.DONE] * 2
        await h.queue.send(json.dumps({"job_id": job_id}), group_id=job_id, dedup_id=f"{job_id}:again")
        assert await h.deliver_until_acknowledged() == 1
        assert llm.calls_about("dash.com") == 1
        assert [llm.calls_about(d) for d in ("a.com", "b.com")] == [2, 2]
