"""The arguments of `firmsift db` (kept apart from what runs them, so `--help` imports nothing heavy)."""

from __future__ import annotations

import argparse

NEEDS_NO_DATABASE = frozenset({"history", "sql"})


def add_db_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    database = commands.add_parser(
        "db", help="database schema (Alembic revisions)",
        description="The schema is owned by Alembic revisions shipped with firmsift. `serve`, `api` and `worker` "
                    "upgrade it at start-up (one process at a time: PostgreSQL's advisory lock); a database "
                    "made before Alembic (its `schema_migrations` table) is adopted at its highest migration.")
    actions = database.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    actions.add_parser("upgrade", help="apply pending revisions")
    actions.add_parser("current", help="print the revision the database is at")
    actions.add_parser("history", help="list every revision, oldest first (no database needed)")
    down = actions.add_parser("downgrade", help="undo revisions above REVISION (base: all; data in them is lost)")
    down.add_argument("revision", metavar="REVISION", help="the revision to go back to, e.g. 0008, or base")
    sql = actions.add_parser("sql", help="print the SQL of an upgrade for review, without a database")
    sql.add_argument("--dialect", choices=("postgresql", "sqlite"), default="postgresql",
                     help="the SQL dialect (default postgresql)")
    sql.add_argument("--from", dest="start", metavar="REVISION",
                     help="the revision the database is at (default: an empty database)")
