"""`firmsift db`: the schema's revisions (Alembic), applied, undone, listed, or printed as SQL."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from firmsift.entrypoints.command_errors import EXIT_OK
from firmsift.ports.schema import Revision, SchemaRevisions


def run_db(revisions: SchemaRevisions, args: argparse.Namespace) -> int:
    """`db history` and `db sql`, answered from the revisions alone; `db upgrade`, `db downgrade
    REVISION` and `db current` on the configured database."""
    if args.db_command == "history":
        print(_listing(revisions.history()))
    elif args.db_command == "sql":
        print(revisions.offline_sql(args.dialect, args.start), end="")
    elif args.db_command == "upgrade":
        applied = revisions.upgrade()
        print(f"applied {len(applied)} revision(s)" + _listing(applied, indent="\n  "))
    elif args.db_command == "downgrade":
        undone = revisions.downgrade(args.revision)
        print(f"undid {len(undone)} revision(s)" + _listing(undone, indent="\n  "))
    else:
        print(revisions.current() or "none: no revision applied")
    return EXIT_OK


def _listing(revisions: Sequence[Revision], indent: str = "") -> str:
    lines = [f"{r.version:04d} {r.name}" for r in revisions]
    return "".join(indent + line for line in lines) if indent else "\n".join(lines)
