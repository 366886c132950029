"""Answer leases in SQLite and PostgreSQL: one holder at a time, lapse after the TTL, release."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import Engine

from firmsift.adapters.sql.leases import SqlLeases
from tests.support.queue_backends import FakeClock

pytestmark = pytest.mark.anyio


async def test_one_holder_at_a_time_until_it_lapses_or_is_released(engine: Engine) -> None:
    clock = FakeClock()
    leases = SqlLeases(engine, clock=clock)
    assert await leases.acquire("a.com", "cpg", "w1", 60)
    assert not await leases.acquire("a.com", "cpg", "w2", 60)
    assert await leases.acquire("a.com", "cpg", "w1", 60)  # renewing one's own lease
    assert await leases.acquire("b.com", "cpg", "w2", 60)  # other domains are independent
    assert await leases.acquire("a.com", "other", "w2", 60)  # and other classifiers
    clock.now += 61
    assert await leases.acquire("a.com", "cpg", "w2", 60)  # w1's lease lapsed
    await leases.release("a.com", "cpg", "w1")  # not w1's any more: no effect
    assert not await leases.acquire("a.com", "cpg", "w3", 60)
    await leases.release("a.com", "cpg", "w2")
    assert await leases.acquire("a.com", "cpg", "w3", 60)


async def test_concurrent_claims_have_exactly_one_winner(engine: Engine) -> None:
    leases = SqlLeases(engine)
    won = await asyncio.gather(*(leases.acquire("race.com", "cpg", f"w{n}", 60) for n in range(8)))
    assert sum(won) == 1
