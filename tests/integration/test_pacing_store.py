"""The pacing store on every backend (in memory, SQLite, PostgreSQL): a fresh state per provider
key, changes that never interleave, and two engines (two processes' pools) sharing one row."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import Engine, text

from firmsift.adapters.memory.pacing import InMemoryPacing
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.pacing import SqlPacing
from firmsift.domain.pacing import PacingState, take_turn
from firmsift.ports.pacing import PacingStore

pytestmark = pytest.mark.anyio
CEILING = 600.0  # requests a minute: turns 0.1 s apart


@pytest.fixture(params=["memory", "sql"])
def store(request: pytest.FixtureRequest, engine: Engine) -> PacingStore:
    return InMemoryPacing() if request.param == "memory" else SqlPacing(engine)


def book(state: PacingState, now: float) -> tuple[PacingState, float]:
    state, turn = take_turn(state, now, CEILING)
    return state, turn.start_at


def book_at_zero(state: PacingState, _now: float) -> tuple[PacingState, float]:
    """A booking as if every one came at the same instant: its slot depends only on the bookings
    before it, not on how fast the machine runs them (a loaded machine spaces real calls wider)."""
    return book(state, 0.0)


async def test_a_new_key_starts_fresh_and_keeps_what_was_written(store: PacingStore) -> None:
    seen: list[PacingState] = []

    def look(state: PacingState, now: float) -> tuple[PacingState, float]:
        seen.append(state)
        return PacingState(limit_requests=42, next_request_at=now), now

    written_at = await store.update("model@base", look)
    await store.update("model@base", look)
    await store.update("other@base", look)
    assert seen[0] == PacingState() and seen[2] == PacingState()  # keys are independent
    assert seen[1] == PacingState(limit_requests=42, next_request_at=written_at)


async def test_concurrent_turns_never_share_a_slot(store: PacingStore) -> None:
    starts = await asyncio.gather(*(store.update("model@base", book_at_zero) for _ in range(30)))
    assert sorted(starts) == pytest.approx([number * 60 / CEILING for number in range(30)], abs=1e-6)


async def test_two_engines_share_one_row(engine: Engine) -> None:
    """Two pools, as two worker processes have, booking on one key at once: no lost update (a lost
    one would give two bookings the same slot and leave one slot empty)."""
    other = make_engine(engine.url)
    try:
        first, second = SqlPacing(engine), SqlPacing(other)
        starts = await asyncio.gather(*(store.update("model@base", book_at_zero)
                                        for _ in range(15) for store in (first, second)))
    finally:
        other.dispose()
    assert sorted(starts) == pytest.approx([number * 60 / CEILING for number in range(30)], abs=1e-6)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM llm_pacing")).scalar() == 1


async def test_an_unreadable_or_foreign_row_is_read_as_far_as_it_goes(engine: Engine) -> None:
    store = SqlPacing(engine)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO llm_pacing (provider_key, state, updated_at) VALUES "
                          "('broken', 'not json', 0), ('newer', '{\"limit_requests\": 7, \"later_field\": 1}', 0)"))
    seen: list[PacingState] = []

    def look(state: PacingState, _now: float) -> tuple[PacingState, None]:
        seen.append(state)
        return state, None

    await store.update("broken", look)
    await store.update("newer", look)
    assert seen == [PacingState(), PacingState(limit_requests=7)]
