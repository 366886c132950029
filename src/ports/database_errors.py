"""What the adapters of the store, key, lease and queue ports raise when their database fails,
so that callers catch these instead of a driver's own exceptions."""

from __future__ import annotations


class DatabaseFailure(Exception):
    """The database failed or refused an operation. The message is the driver's own (it names
    host and port, never the password, and holds no SQL); the driver's error is the __cause__.
    Not a FirmsiftError: the API answers it 503 and the CLI exits 2, as for any backend fault."""


class DatabaseUnavailable(DatabaseFailure):
    """The database could not be reached or used: a refused or lost connection, an unknown
    database, a server shutting down, a file that cannot be opened. A server may come back."""


class DatabaseReadOnly(DatabaseUnavailable):
    """The database takes no writes: its file, the files beside it or its folder are read-only
    to this process (or SQLite refused a write as read-only). The message names the file and what
    to do; `what` names the file alone, without the folder it is in, for answers anyone may read
    (/readyz). Work resumes by itself once the files are writable again."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


class InvalidDatabaseUrl(Exception):
    """The database URL cannot be used: it does not parse, or its driver cannot be loaded."""
