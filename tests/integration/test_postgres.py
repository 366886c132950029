"""PostgreSQL-specific behaviour of the SQL adapters against a real server: migrations (types,
idempotence, concurrent runners) and the engine (driver, URL spellings, pool settings)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.migrations import current_revision, history, upgrade
from tests.support.postgres import postgres_engine


@pytest.fixture
def blank() -> Iterator[Engine]:
    """A fresh database with no schema at all."""
    with postgres_engine(migrate=False) as engine:
        yield engine


def _column(engine: Engine, table: str, column: str) -> tuple[str, str | None]:
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT data_type, column_default FROM information_schema.columns"
                 " WHERE table_name = :t AND column_name = :c"),
            {"t": table, "c": column},
        ).one()
    return row[0], row[1]


def test_migrations_apply_once_with_postgres_types(blank: Engine) -> None:
    assert upgrade(blank) == history()
    assert upgrade(blank) == []
    assert current_revision(blank) == f"{history()[-1].version:04d}"
    data_type, default = _column(blank, "queue_messages", "id")
    assert data_type == "bigint" and default is not None and default.startswith("nextval(")
    assert _column(blank, "jobs", "reply_sent") == ("boolean", "false")
    assert _column(blank, "answers", "answer")[0] == "boolean"
    assert _column(blank, "queue_messages", "visible_at")[0] == "double precision"


def test_boolean_defaults_and_serial_ids_work_when_omitted(blank: Engine) -> None:
    upgrade(blank)
    with blank.begin() as conn:
        conn.execute(text("INSERT INTO jobs (id, classifier, status, created_at, updated_at)"
                          " VALUES ('j', 'cpg', 'PENDING', 1, 1)"))
        ids = [conn.execute(text("INSERT INTO queue_messages (queue, group_id, body, sent_at, visible_at)"
                                 " VALUES ('q', 'g', 'b', 1, 1) RETURNING id")).scalar_one() for _ in range(2)]
        assert conn.execute(text("SELECT reply_sent FROM jobs")).scalar_one() is False
    assert ids[1] > ids[0]


def test_concurrent_upgrades_take_turns_and_all_succeed(blank: Engine) -> None:
    runners = 8
    engines = [make_engine(blank.url) for _ in range(runners)]
    start = threading.Barrier(runners)
    applied: list[int] = []
    errors: list[BaseException] = []

    def run(engine: Engine) -> None:
        start.wait()
        try:
            applied.extend(m.version for m in upgrade(engine))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(e,)) for e in engines]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for engine in engines:
            engine.dispose()
    # Without the advisory lock every run of this fails with a duplicate pg_type row.
    assert errors == []
    assert sorted(applied) == [m.version for m in history()]  # each applied by exactly one runner


def test_a_plain_postgresql_url_gets_the_psycopg_driver(blank: Engine) -> None:
    plain = blank.url.render_as_string(hide_password=False).replace("postgresql+psycopg://", "postgresql://")
    for url in (plain, plain.replace("postgresql://", "postgres://", 1)):
        engine = make_engine(url)
        try:
            assert (engine.dialect.name, engine.dialect.driver) == ("postgresql", "psycopg")
            with engine.connect() as conn:
                assert conn.execute(text("SELECT current_database()")).scalar_one() == blank.url.database
        finally:
            engine.dispose()


def test_making_an_engine_does_not_connect() -> None:
    engine = make_engine("postgresql://nobody@127.0.0.1:1/nothing")  # nothing listens on port 1
    assert engine.dialect.driver == "psycopg"
    engine.dispose()


def test_pool_size_and_max_overflow_reach_the_engine(blank: Engine) -> None:
    engine = make_engine(blank.url, pool_size=2, max_overflow=1)
    held = [engine.connect() for _ in range(3)]
    try:
        assert (engine.pool.size(), engine.pool.checkedout(), engine.pool.overflow()) == (2, 3, 1)
        fourth = threading.Thread(target=lambda: engine.connect().close(), daemon=True)
        fourth.start()
        fourth.join(0.5)
        assert fourth.is_alive()  # pool and overflow are used up: the fourth waits
        held.pop().close()
        fourth.join(5)
        assert not fourth.is_alive()
    finally:
        for conn in held:
            conn.close()
        engine.dispose()


def test_pooled_connections_the_server_closed_are_replaced(blank: Engine) -> None:
    engine = make_engine(blank.url, pool_size=2, max_overflow=0)
    try:
        with engine.connect() as conn:
            victim = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with blank.connect() as admin:
            assert admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": victim}).scalar_one()
        # The pool hands out the dead connection next; pre-ping notices and reconnects.
        with engine.connect() as conn:
            assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() != victim
    finally:
        engine.dispose()
