"""Daily limits count the calls in flight: each domain's expected cost is held before its paid path
and dropped once its cost is stored, atomically across processes (SQLite, PostgreSQL and the
in-memory store alike), so a burst of calls cannot start past the limit before any has finished."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import datetime, timedelta, timezone

import pytest
from dependency_injector import providers

from firmsift.adapters.memory.keys import InMemoryApiKeys
from firmsift.adapters.memory.providers import ScriptedLLM
from firmsift.domain.budgets import BudgetExhausted
from firmsift.domain.estimates import TokenHistory, tokens_per_question
from firmsift.domain.model import DomainResult, Job, JobStatus, ResultStatus
from firmsift.domain.spend_reservations import RESERVATION_LIFETIME, ExpectedCost
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.services.budgets import Budgets
from firmsift.services.keys import create_key
from firmsift.services.spend_gate import SpendGate

pytestmark = pytest.mark.anyio
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Snacks."}'


@pytest.fixture
def ledger(backend_container) -> tuple[object, object]:  # noqa: ANN001
    """(the ledger holding the spend and the holds, the store its jobs are saved in), on each backend."""
    return backend_container.spend_ledger(), backend_container.store()


async def _spent(store, owner: str, cost: float) -> None:
    await store.create_job(Job(id=f"done-{owner}-{cost}", classifier="cpg", status=JobStatus.RUNNING, owner=owner,
                               created_at=datetime.now(timezone.utc), domains=("old.com",)))
    await store.save_result(f"done-{owner}-{cost}", DomainResult("old.com", ResultStatus.DONE, cost_usd=cost), None)


async def test_holds_count_with_what_finished_and_are_dropped_or_lapse(ledger) -> None:
    spend, store = ledger
    keys = InMemoryApiKeys()
    key = (await create_key("team", [], keys, daily_limit_usd=0.05)).record
    await _spent(store, key.id, 0.01)
    budgets = Budgets(spend, keys, None)
    # 0.01 finished + holds of 0.015: the third hold starts at 0.04, the fourth would at 0.055.
    holds = [await budgets.reserve(key.id, 0.015) for _ in range(4)]
    assert [isinstance(h, str) for h in holds] == [True, True, True, False]
    refused = holds[3]
    assert isinstance(refused, BudgetExhausted) and (refused.scope, refused.spent) == ("key", 0.055)
    await budgets.release(holds[0])
    assert isinstance(await budgets.reserve(key.id, 0.015), str)
    # A worker that died holding them: they lapse.
    later = Budgets(spend, keys, None, now=lambda: datetime.now(timezone.utc) + RESERVATION_LIFETIME
                    + timedelta(seconds=1))
    assert isinstance(await later.reserve(key.id, 0.015), str)


async def test_the_global_limit_counts_every_owners_holds(ledger) -> None:
    spend, _store = ledger
    keys = InMemoryApiKeys()
    budgets = Budgets(spend, keys, 0.03)
    assert isinstance(await budgets.reserve("key_a", 0.02), str)
    assert isinstance(await budgets.reserve("", 0.02), str)  # 0.02 held: still under
    refused = await budgets.reserve("key_b", 0.02)
    assert isinstance(refused, BudgetExhausted) and refused.scope == "global"


async def test_holds_taken_at_once_from_many_connections_never_pass_the_limit(ledger) -> None:
    spend, _store = ledger
    keys = InMemoryApiKeys()
    key = (await create_key("team", [], keys, daily_limit_usd=0.1)).record
    budgets = Budgets(spend, keys, None)
    # Each reserve runs in its own thread and transaction on the SQL stores.
    held = await asyncio.gather(*(budgets.reserve(key.id, 0.01) for _ in range(40)))
    assert sum(isinstance(h, str) for h in held) == 10


class _GatedLLM:
    """The scripted LLM, each call held until the test opens the gate; counts the calls started."""

    def __init__(self, inner: ScriptedLLM) -> None:
        self.inner, self.model, self.gate, self.started = inner, inner.model, asyncio.Event(), 0

    async def complete(self, system: str, user: str, *, json_schema: dict) -> object:
        self.started += 1
        await self.gate.wait()
        return await self.inner.complete(system, user, json_schema=json_schema)


class _CountingGate(SpendGate):
    def __init__(self, gate: SpendGate) -> None:
        super().__init__(gate.budgets, gate.expected)
        self.decided = self.granted = 0
        self.decided_all = asyncio.Event()
        self.expected_decisions = 0

    async def hold(self, owner: str, classifier: str):  # type: ignore[no-untyped-def]
        outcome = await super().hold(owner, classifier)
        self.decided += 1
        self.granted += isinstance(outcome, str)
        if self.decided == self.expected_decisions:
            self.decided_all.set()
        return outcome


async def test_a_burst_of_two_hundred_domains_spends_the_limit_plus_at_most_one_call() -> None:
    """The reported case: a key limited to 0.05 USD, 200 domains, every call in flight at once."""
    container = in_memory_container(Settings(wait_time=0, worker_jobs=20, domain_concurrency=10))
    catalog = container.catalog()
    tokens = tokens_per_question(TokenHistory(), catalog["cpg"])  # what the gate expects: each call costs that
    pricing = container.pricing()
    per_call = pricing.cost("scripted-model", tokens.tokens_in, tokens.tokens_out)
    llm = _GatedLLM(ScriptedLLM(YES, tokens=(tokens.tokens_in, tokens.tokens_out)))
    container.llm.override(llm)
    gate = _CountingGate(SpendGate(container.budgets(), ExpectedCost(lambda _: per_call)))
    container.spend_gate.override(providers.Object(gate))
    store, keys, queue = container.store(), container.api_keys(), container.work_queue()
    limit = 0.05
    key = (await create_key("team", [], keys, daily_limit_usd=limit)).record
    gate.expected_decisions = 200
    for job in range(20):
        await store.create_job(Job(id=f"job-{job}", classifier="cpg", status=JobStatus.PENDING, owner=key.id,
                                   created_at=datetime.now(timezone.utc),
                                   domains=tuple(f"d{job}-{n}.example.com" for n in range(10))))
        await queue.send(json.dumps({"job_id": f"job-{job}"}), group_id=f"job-{job}", dedup_id=f"job-{job}")
    worker = container.worker()
    messages = await queue.receive(max_messages=10) + await queue.receive(max_messages=10)
    handled = [asyncio.create_task(worker.handle(message)) for message in messages]
    await asyncio.wait_for(gate.decided_all.wait(), 60)  # every domain held or refused, no call finished
    # Every call that may start holds its cost: as many as the limit holds, whatever the concurrency.
    assert gate.granted == math.ceil(limit / per_call) and llm.started <= gate.granted
    llm.gate.set()
    await asyncio.gather(*handled)
    spent = (await store.spend_between(datetime.now(timezone.utc) - timedelta(days=1),
                                       datetime.now(timezone.utc) + timedelta(days=1), key.id)).cost_usd
    assert limit <= spent <= limit + per_call, (spent, per_call)
    assert store.reservations == {}  # every hold dropped once its cost was stored
