"""The database schema's revisions, as `firmsift db` applies, undoes and lists them."""

from __future__ import annotations

from typing import Protocol


class Revision(Protocol):
    """One revision: its number ("0007" is 7) and its name."""

    @property
    def version(self) -> int: ...

    @property
    def name(self) -> str: ...


class SchemaRevisions(Protocol):
    def history(self) -> list[Revision]:
        """Every revision, oldest first (no database needed)."""

    def offline_sql(self, dialect: str, start: str | None = None) -> str:
        """The SQL that upgrading from `start` (None: an empty database) to the newest revision
        runs, for review (no database needed)."""

    def upgrade(self) -> list[Revision]:
        """Apply the revisions not applied yet; those applied, oldest first."""

    def downgrade(self, to: str) -> list[Revision]:
        """Undo the applied revisions above `to` ("base": all); those undone, newest first."""

    def current(self) -> str | None:
        """The revision the database is at (None: none applied)."""
