"""What adapters raise when the infrastructure behind a port fails: the database (of the store,
key, lease and queue ports) and the queues, so that callers catch these instead of a driver's or
an SDK's own exceptions. Every one is an InfrastructureFailure."""

from __future__ import annotations

from firmsift.domain.errors import FirmsiftError


class InfrastructureFailure(Exception):
    """Base of every error raised because a backend failed, refused or cannot be used; the
    vendor's own error, if any, is the __cause__. Not itself a FirmsiftError: a database failure
    is a 503 `service_unavailable` for the API and exit 2 for the CLI, as for any backend fault,
    never a refusal of the request. Each subclass says how it is answered."""


class DatabaseFailure(InfrastructureFailure):
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


class InvalidDatabaseUrl(InfrastructureFailure):
    """The database URL cannot be used: it does not parse, or its driver cannot be loaded."""


class QueueUnavailable(InfrastructureFailure, FirmsiftError):
    """A queue could not be reached or refused an operation: above all, the work queue could not
    durably accept a message. Also a FirmsiftError, as it has always been: the API answers it 503
    `queue_unavailable` with Retry-After (entrypoints/http/errors.py), the CLI prints it and exits
    1, and the commands that turn a FirmsiftError into their own message do so for it too."""

    code = "queue_unavailable"


class QueuePartlySent(QueueUnavailable):
    """Sending several messages stopped: the first `sent` of them are durably on the queue; the
    others may or may not be (a caller that gives up on them must tolerate their arriving)."""

    def __init__(self, message: str, sent: int) -> None:
        super().__init__(message)
        self.sent = sent
