"""The schema's revisions (ports/schema.py) on a database opened only when one is needed."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Engine

from firmsift.adapters.sql.migrations import Migration, current_revision, downgrade, history, offline_sql, upgrade


class SqlRevisions:
    """`engine` opens the database on the first call that needs it: history and SQL need none."""

    def __init__(self, engine: Callable[[], Engine]) -> None:
        self._engine = engine

    def history(self) -> list[Migration]:
        return history()

    def offline_sql(self, dialect: str, start: str | None = None) -> str:
        return offline_sql(dialect, start)

    def upgrade(self) -> list[Migration]:
        return upgrade(self._engine())

    def downgrade(self, to: str) -> list[Migration]:
        return downgrade(self._engine(), to)

    def current(self) -> str | None:
        return current_revision(self._engine())
