"""Schema migrations by Alembic: the revisions in schema/versions (portable SQL for SQLite and
PostgreSQL), applied one runner at a time, all pending ones in one transaction.

A database made before Alembic owned the schema records its numbered migrations in
`schema_migrations`; the first run here stamps Alembic's `alembic_version` with the highest of
them (revision "0007" is migration 7) and goes on from there. `schema_migrations` is then kept as
it was, no longer written.

Alembic (and Mako, which it loads) costs ~12 MiB and half a second to import, so a process whose
database is already at the newest revision (the file names in schema/versions tell which) checks
that with one query and never imports it.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text

from firmsift.adapters.sql.errors import database_errors
from firmsift.domain.errors import FirmsiftError

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import Script, ScriptDirectory

SCRIPT_LOCATION = Path(__file__).with_name("schema")
CURRENT = text("SELECT version_num FROM alembic_version")
# A PostgreSQL advisory lock held until the transaction ends. Its 64-bit key spells "firmsift"
# in ASCII, a key no other application on the server is likely to pick.
MIGRATION_LOCK_KEY = int.from_bytes(b"firmsift", "big")
LOCK_MIGRATIONS = text("SELECT pg_advisory_xact_lock(:key)")
LATEST_NUMBERED = text("SELECT MAX(version) FROM schema_migrations")


@dataclass(frozen=True)
class Migration:
    """One revision: its number ("0007" is 7) and its name (the file's, after the number)."""

    version: int
    name: str

    @classmethod
    def of(cls, script: Script) -> Migration:
        return cls(int(script.revision), Path(script.path).stem.split("_", 1)[1])


class RevisionNotFound(FirmsiftError):
    """A revision named on the command line that Alembic cannot resolve (or not from here)."""

    code = "revision_not_found"


@contextlib.contextmanager
def _named_revisions() -> Iterator[None]:
    """Alembic's errors for a revision it cannot find or reach, as one clear RevisionNotFound."""
    from alembic.script.revision import RevisionError
    from alembic.util import CommandError

    try:
        yield
    except (CommandError, RevisionError) as error:
        raise RevisionNotFound(f"{error} (`firmsift db history` lists the revisions)") from None


def newest_revision() -> str:
    """The newest revision's id, from the file names alone ("0010_evidence_reuse.py": "0010")."""
    return max(path.name[:4] for path in (SCRIPT_LOCATION / "versions").glob("[0-9][0-9][0-9][0-9]_*.py"))


def alembic_config(connection: Connection | None = None, *, dialect: str | None = None,
                   output: io.StringIO | None = None) -> Config:
    from alembic.config import Config

    config = Config(output_buffer=output)
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    if dialect is not None:
        config.set_main_option("dialect", dialect)
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def _scripts() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


def history() -> list[Migration]:
    """Every revision, oldest first."""
    scripts = _scripts()
    return [Migration.of(script) for script in reversed(list(scripts.walk_revisions()))]


@database_errors()
def upgrade(engine: Engine, to: str = "head") -> list[Migration]:
    """Apply the revisions up to `to` that are not applied yet; returns those applied. Safe to run
    from several processes at once: the first applies, the others then find nothing to do.
    A driver error leaves as DatabaseUnavailable (what start-up waits out) or DatabaseFailure."""
    if to == "head" and _at(engine, newest_revision()):
        return []
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    scripts = _scripts()
    with engine.begin() as conn:
        _serialize(conn)
        _adopt_numbered_history(conn, scripts)
        current = MigrationContext.configure(conn).get_current_revision()
        pending = [Migration.of(script) for script in scripts.iterate_revisions(to, current or "base")]
        command.upgrade(alembic_config(conn), to)
    return list(reversed(pending))


@database_errors()
def downgrade(engine: Engine, to: str) -> list[Migration]:
    """Undo the applied revisions above `to` ("base": all of them); returns those undone, newest first."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    scripts = _scripts()
    with engine.begin() as conn:
        _serialize(conn)
        _adopt_numbered_history(conn, scripts)
        current = MigrationContext.configure(conn).get_current_revision()
        with _named_revisions():
            undone = [Migration.of(script) for script in scripts.iterate_revisions(current, to)] if current else []
            command.downgrade(alembic_config(conn), to)
    return undone


@database_errors()
def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None: none applied)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def offline_sql(dialect: str, start: str | None = None, end: str = "head") -> str:
    """The SQL that upgrading from `start` (None: an empty database) to `end` runs, for review."""
    from alembic import command

    output = io.StringIO()
    with _named_revisions():
        command.upgrade(alembic_config(dialect=dialect, output=output), f"{start}:{end}" if start else end, sql=True)
    return output.getvalue()


@database_errors()
def is_current(engine: Engine) -> bool:
    """Whether the database is at the newest revision: one query, no Alembic import. A driver
    error leaves as DatabaseUnavailable (what start-up waits out) or DatabaseFailure."""
    return _at(engine, newest_revision())


def _at(engine: Engine, revision: str) -> bool:
    """Whether the database is at `revision` (False too when Alembic has not stamped it yet)."""
    with engine.connect() as conn:
        if "alembic_version" not in inspect(conn).get_table_names():
            return False
        return conn.execute(CURRENT).scalar() == revision


def _serialize(conn: Connection) -> None:
    """Make concurrent runners take turns for the rest of this transaction, so they neither
    race on CREATE TABLE (PostgreSQL reports a duplicate pg_type row) nor apply a revision
    twice. SQLite needs nothing: BEGIN IMMEDIATE already gives one writer at a time."""
    if conn.dialect.name == "postgresql":
        conn.execute(LOCK_MIGRATIONS, {"key": MIGRATION_LOCK_KEY})


def _adopt_numbered_history(conn: Connection, scripts: ScriptDirectory) -> None:
    """Stamp a database migrated by the numbered migrations (before Alembic) at the revision of
    its highest migration, once."""
    tables = set(inspect(conn).get_table_names())
    if "alembic_version" in tables or "schema_migrations" not in tables:
        return
    latest = conn.execute(LATEST_NUMBERED).scalar()
    if latest is not None:
        from alembic.runtime.migration import MigrationContext

        MigrationContext.configure(conn).stamp(scripts, f"{latest:04d}")
