"""Alembic owns the schema: every revision applies and undoes on SQLite and PostgreSQL, the models in
tables.py match what the revisions build (drift fails here), the offline SQL builds the same schema,
and a database made by the numbered migrations before Alembic upgrades in place with its rows."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.migrations import current_revision, downgrade, history, newest_revision, offline_sql, upgrade
from firmsift.adapters.sql.tables import metadata
from tests.support.databases import SQL_BACKENDS, migrated_engine

FIXTURES = Path(__file__).parents[1] / "fixtures" / "databases"
NUMBERED_AT = 10  # the fixtures were dumped from databases made by the numbered migrations 1-10
# What SQLite's reflection cannot tell apart from the models: column types (DOUBLE PRECISION reads
# back as REAL), NOT NULL on a TEXT primary key (SQLite lets it be NULL) and ON DELETE of a foreign
# key. PostgreSQL is compared on everything.
SQLITE_BLIND = {"modify_type", "modify_nullable", "add_fk", "remove_fk"}


def drift(engine: Engine) -> list[object]:
    """What autogenerate would change to make the database match tables.py (nothing, when in step)."""
    postgres = engine.dialect.name == "postgresql"
    with engine.connect() as conn:
        changes = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": postgres}), metadata)
    kinds = lambda change: change[0][0] if isinstance(change, list) else change[0]  # noqa: E731
    return [change for change in changes if (postgres or kinds(change) not in SQLITE_BLIND)
            and not _is_numbered_history(change)]


def _is_numbered_history(change: object) -> bool:
    """An adopted database keeps `schema_migrations` (so older firmsift can still start on it)."""
    return isinstance(change, tuple) and change[0] == "remove_table" and change[1].name == "schema_migrations"


def tables(engine: Engine) -> set[str]:
    return set(inspect(engine).get_table_names())


@pytest.mark.parametrize("backend", SQL_BACKENDS)
def test_every_revision_applies_undoes_and_applies_again_with_no_drift(backend: str, tmp_path: Path) -> None:
    revisions = history()
    assert [m.version for m in revisions] == list(range(1, len(revisions) + 1))
    with migrated_engine(backend, tmp_path, to=None) as engine:
        assert upgrade(engine) == revisions
        assert upgrade(engine) == []
        assert current_revision(engine) == f"{revisions[-1].version:04d}"
        assert drift(engine) == []
        assert downgrade(engine, "base") == list(reversed(revisions))
        assert tables(engine) == {"alembic_version"} and current_revision(engine) is None
        assert upgrade(engine, to="0006") == revisions[:6]
        assert upgrade(engine) == revisions[6:]
        assert drift(engine) == []


def test_a_model_that_drifts_from_the_revisions_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import Column, Text

    with migrated_engine("sqlite", tmp_path, to=None) as engine:
        upgrade(engine)
        monkeypatch.setattr(metadata.tables["jobs"], "_columns", metadata.tables["jobs"]._columns)
        extra = Column("not_in_any_revision", Text)
        metadata.tables["jobs"].append_column(extra)
        try:
            assert [c[0] for c in drift(engine)] == ["add_column"]
        finally:
            metadata.tables["jobs"]._columns.remove(extra)
        assert drift(engine) == []


def test_the_offline_sql_builds_the_same_schema(tmp_path: Path) -> None:
    script = offline_sql("sqlite")
    assert "CREATE TABLE jobs" in script and "alembic_version" in script
    with contextlib.closing(sqlite3.connect(tmp_path / "offline.db")) as conn:
        conn.executescript(script)
    engine = make_engine(f"sqlite:///{tmp_path / 'offline.db'}")
    try:
        assert current_revision(engine) == f"{history()[-1].version:04d}"
        assert drift(engine) == []
    finally:
        engine.dispose()
    assert "DOUBLE PRECISION" in offline_sql("postgresql", start="0008") and "CREATE TABLE jobs" not in offline_sql(
        "postgresql", start="0008")


def _load_numbered_fixture(engine: Engine) -> None:
    dump = (FIXTURES / f"numbered_{NUMBERED_AT:04d}.{engine.dialect.name}.sql").read_text(encoding="utf-8")
    if engine.dialect.name == "sqlite":
        with contextlib.closing(sqlite3.connect(engine.url.database)) as conn:
            conn.executescript(dump)
        return
    with engine.begin() as conn:
        conn.exec_driver_sql(dump)


@pytest.mark.parametrize("backend", SQL_BACKENDS)
def test_a_database_made_by_the_numbered_migrations_upgrades_in_place_with_its_rows(
        backend: str, tmp_path: Path) -> None:
    with migrated_engine(backend, tmp_path, to=None) as engine:
        _load_numbered_fixture(engine)
        assert "alembic_version" not in tables(engine)
        applied = upgrade(engine)
        assert applied == [m for m in history() if m.version > NUMBERED_AT]
        assert current_revision(engine) == f"{history()[-1].version:04d}"
        assert drift(engine) == []
        with engine.connect() as conn:
            assert conn.execute(text("SELECT reason, tokens_in FROM answers WHERE domain = 'acme.com'")).one() == (
                "sells soap", 900)
            assert conn.execute(text("SELECT COUNT(*) FROM schema_migrations")).scalar() == NUMBERED_AT
        assert upgrade(engine) == []  # adopted once: the stamp is not taken again


def test_the_revisions_form_one_line_and_their_file_names_tell_the_newest() -> None:
    from firmsift.adapters.sql.migrations import SCRIPT_LOCATION

    revisions = history()
    assert newest_revision() == f"{revisions[-1].version:04d}"
    for path in (SCRIPT_LOCATION / "versions").glob("[0-9]*.py"):
        number = int(path.name[:4])
        source = path.read_text(encoding="utf-8")
        assert f'revision = "{number:04d}"' in source
        assert (f'down_revision = "{number - 1:04d}"' if number > 1 else "down_revision = None") in source


def test_a_process_whose_database_is_at_the_newest_revision_never_imports_alembic(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'at-head.db'}")
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    program = ("import sys\nfrom firmsift.adapters.sql.engine import make_engine\n"
               "from firmsift.adapters.sql.migrations import upgrade\n"
               f"assert upgrade(make_engine({str('sqlite:///' + str(tmp_path / 'at-head.db'))!r})) == []\n"
               "print(sorted(m for m in sys.modules if m.split('.')[0] in ('alembic', 'mako')))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("child_fails", [False, True], ids=["child upgrades", "child fails, parent upgrades"])
def test_a_long_running_process_upgrades_a_new_database_without_importing_alembic(tmp_path: Path,
                                                                                  child_fails: bool) -> None:
    # `firmsift api` and `worker` migrate at start (migrate_when_reachable): a forked child applies
    # the upgrade, so the process that then serves for days never carries Alembic and Mako. If
    # the child fails, the process upgrades itself, as before, and says so.
    database = tmp_path / "new.db"
    program = (
        "import sys\n"
        "from firmsift.entrypoints.wiring import database_wait\n"
        "from firmsift.entrypoints.wiring.runtime import start_container\n"
        "from firmsift.entrypoints.settings import Settings\n"
        + f"container = start_container(Settings(database_url={'sqlite:///' + str(database)!r}), migrate=False)\n"
        + ("import multiprocessing\n"
           "from dependency_injector import providers\n"
           "from firmsift.adapters.sql.migrations import upgrade\n"
           "def upgrade_unless_child(engine):\n"
           "    if multiprocessing.current_process().name == 'firmsift-db-upgrade':\n"
           "        raise RuntimeError('disk full (scripted)')\n"
           "    return upgrade(engine)\n"
           "container.migrate.override(providers.Callable(upgrade_unless_child, container.engine))\n"
           if child_fails else "")
        + "database_wait.migrate_when_reachable(container)\n"
        "assert container.schema_is_current()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'alembic', 'mako'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("['alembic', 'mako']" if child_fails else "[]")
    assert ("upgrading in this process" in done.stderr) is child_fails
    assert ("schema upgrade in the child process: disk full (scripted)" in done.stderr) is child_fails
    assert "Traceback" not in done.stderr
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == newest_revision()
