"""The web session store, on every backend (memory, SQLite, PostgreSQL): a new id and CSRF token at
every start, forgotten when idle (sooner when never signed in), a notice kept for one page, one
secret for the sign-in forms; the SQL store keeps no usable id, bounds anonymous sessions and shares
its forms' secret between processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from firmsift.adapters.sql.tables import web_sessions
from firmsift.adapters.sql.web_sessions import SqlWebSessions
from firmsift.domain.web_sessions import ANONYMOUS_IDLE_SECONDS, IDLE_SECONDS, TOUCH_SECONDS, session_digest
from tests.support.clocks import Clock
from tests.support.databases import SQL_BACKENDS, migrated_engine

pytestmark = pytest.mark.anyio


@pytest.fixture
def clock() -> Clock:
    return Clock(1_800_000_000.0)


@pytest.fixture
def sessions(backend_container, clock: Clock) -> Any:  # noqa: ANN001
    """The web session store on each backend, on the fake clock."""
    return backend_container.web_sessions(clock=clock)


async def test_a_session_replaced_at_sign_in_is_gone_and_the_new_one_has_fresh_secrets(sessions: Any) -> None:
    visitor = await sessions.start(None)
    signed_in = await sessions.start("key_1", replacing=visitor)
    assert await sessions.find(visitor.id) is None
    found = await sessions.find(signed_in.id)
    assert found is not None and (found.id, found.csrf, found.key_id) == (signed_in.id, signed_in.csrf, "key_1")
    assert signed_in.id != visitor.id and signed_in.csrf != visitor.csrf


async def test_an_unknown_or_missing_id_finds_nothing(sessions: Any) -> None:
    await sessions.start("key_1")
    assert [await sessions.find(wrong) for wrong in (None, "", "no-such-session")] == [None, None, None]


async def test_a_csrf_token_must_match_exactly(sessions: Any) -> None:
    session = await sessions.find((await sessions.start(None)).id)
    assert session.csrf_matches(session.csrf)
    assert not any(session.csrf_matches(wrong) for wrong in (None, "", session.csrf[:-1], session.csrf + "x"))


async def test_an_idle_session_is_forgotten_and_use_keeps_one_alive(sessions: Any, clock: Clock) -> None:
    used, idle = await sessions.start("a"), await sessions.start("b")
    clock.now += IDLE_SECONDS - 1
    assert await sessions.find(used.id) is not None
    clock.now += 2
    assert await sessions.find(idle.id) is None and await sessions.find(used.id) is not None


async def test_a_session_never_signed_in_is_forgotten_sooner(sessions: Any, clock: Clock) -> None:
    anonymous, signed_in = await sessions.start(None), await sessions.start("a")
    clock.now += ANONYMOUS_IDLE_SECONDS + 1
    assert await sessions.find(anonymous.id) is None and await sessions.find(signed_in.id) is not None


async def test_a_notice_is_kept_for_the_next_find_until_taken(sessions: Any) -> None:
    session = await sessions.start("a")
    await sessions.leave_notice(session, "Corrected acme.com (cpg) to yes.")
    found = await sessions.find(session.id)
    assert found.notice == "Corrected acme.com (cpg) to yes."
    await sessions.leave_notice(found, None)
    assert (await sessions.find(session.id)).notice is None


async def test_an_ended_session_is_gone(sessions: Any) -> None:
    session = await sessions.start("a")
    await sessions.end(session)
    assert await sessions.find(session.id) is None


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_the_table_holds_no_usable_id_and_use_is_written_at_most_each_minute(
        backend: str, tmp_path: Path, clock: Clock) -> None:
    with migrated_engine(backend, tmp_path) as engine:
        sessions = SqlWebSessions(engine, clock=clock)
        session = await sessions.start("a")
        started = clock.now
        clock.now += TOUCH_SECONDS - 1
        await sessions.find(session.id)
        with engine.connect() as conn:
            [row] = conn.execute(select(web_sessions)).mappings().all()
        assert row["id_digest"] == session_digest(session.id) and session.id not in row.values()
        assert row["last_used"] == started  # not written for a page view within the minute
        clock.now += 2
        await sessions.find(session.id)
        with engine.connect() as conn:
            assert conn.execute(select(web_sessions.c.last_used)).scalar_one() == clock.now


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_anonymous_sessions_past_the_bound_go_oldest_first(
        backend: str, tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("firmsift.adapters.sql.web_sessions.MAX_ANONYMOUS_SESSIONS", 3)
    with migrated_engine(backend, tmp_path) as engine:
        sessions = SqlWebSessions(engine, clock=clock)
        signed_in = await sessions.start("a")
        started = []
        for _ in range(5):
            clock.now += 1
            started.append(await sessions.start(None))
        assert [await sessions.find(s.id) is not None for s in started] == [False, False, True, True, True]
        assert await sessions.find(signed_in.id) is not None  # signed-in sessions are not counted


async def test_the_form_secret_is_32_bytes_and_stays_the_same(sessions: Any) -> None:
    secret = await sessions.form_secret()
    assert len(secret) == 32 and await sessions.form_secret() == secret


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_every_process_on_a_database_shares_its_form_secret_and_reading_it_writes_nothing(
        backend: str, tmp_path: Path, clock: Clock) -> None:
    with migrated_engine(backend, tmp_path) as engine:
        one, other_process = SqlWebSessions(engine, clock=clock), SqlWebSessions(engine, clock=clock)
        secret = await one.form_secret()
        assert await other_process.form_secret() == secret
        with engine.connect() as conn:
            assert conn.execute(select(web_sessions)).first() is None  # no session row made for it
    with migrated_engine(backend, tmp_path / "another") as engine:
        assert await SqlWebSessions(engine, clock=clock).form_secret() != secret  # made per database
