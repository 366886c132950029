"""`firmsift db`: the schema's revisions (Alembic), applied, undone, listed, or printed as SQL."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from firmsift.adapters.sql.migrations import Migration, current_revision, downgrade, history, offline_sql
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.cli.command_errors import EXIT_OK


def run_db_offline(args: argparse.Namespace) -> int:
    """`db history` and `db sql`: answered from the revisions alone."""
    if args.db_command == "history":
        print(_listing(history()))
    else:
        print(offline_sql(args.dialect, args.start), end="")
    return EXIT_OK


def run_db(container: Container, args: argparse.Namespace) -> int:
    """`db upgrade`, `db downgrade REVISION` and `db current` on the configured database."""
    if args.db_command == "upgrade":
        applied = container.migrate()
        print(f"applied {len(applied)} revision(s)" + _listing(applied, indent="\n  "))
    elif args.db_command == "downgrade":
        undone = downgrade(container.engine(), args.revision)
        print(f"undid {len(undone)} revision(s)" + _listing(undone, indent="\n  "))
    else:
        print(current_revision(container.engine()) or "none: no revision applied")
    return EXIT_OK


def _listing(migrations: Sequence[Migration], indent: str = "") -> str:
    lines = [f"{m.version:04d} {m.name}" for m in migrations]
    return "".join(indent + line for line in lines) if indent else "\n".join(lines)
