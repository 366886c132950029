"""Whether this process may write a SQLite database: its folder, the file, and its -wal and -shm
files where they exist, checked before SQLite opens the file and before each transaction.

SQLite writes its WAL index through a shared, writable memory map of the -shm file for as long as
a connection is open. When the kernel stops that file being written behind the map (the immutable
attribute, `chattr +i`, which binds root too; a file system gone read-only), the next transaction's
write to the map, or the connection's close, is a SIGBUS that kills the process. File modes
(`chmod 444`) are checked only when a file is opened: a process that had it open writes on, and
one that opens it after is given it read-only (SQLITE_READONLY on its first write). The checks
here refuse such a database with one error naming the file and what to do before SQLite touches
it, and again when SQLite itself refuses a write as read-only; work resumes with the first
transaction after the files are writable again."""

from __future__ import annotations

import os
import pwd
import sqlite3
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine, event
from sqlalchemy.engine import ExceptionContext

from firmsift.ports.infrastructure_errors import DatabaseReadOnly

SQLITE_READONLY = 8  # SQLite's primary result code; its extended codes keep it in their low byte
WAL_FILES = ("-wal", "-shm")
RESUMES = "work resumes by itself once they are"


def read_only_problem(database: Path) -> DatabaseReadOnly | None:
    """Why this process may not write `database` (the first of its folder, the file and its -wal and
    -shm files that exists and is not writable to it), or None. A file not there yet is no
    problem: SQLite creates it, in a folder it may write."""
    folder = database.parent
    for path in (folder, database, *(database.with_name(database.name + suffix) for suffix in WAL_FILES)):
        # access() first: one call per file when all is well; lexists only for a refusal.
        if not os.access(path, os.W_OK) and os.path.lexists(path):
            what = f"the folder of {database.name}" if path == folder else path.name
            return DatabaseReadOnly(f"the database is read-only: {path} is not writable by this process "
                                    f"({_user()}): make {_files(database)} writable by that user; {RESUMES}",
                                    f"{what} is not writable")
    return None


def refused_as_read_only(error: BaseException) -> bool:
    """Whether SQLite refused a write because it holds the database read-only (SQLITE_READONLY)."""
    if not isinstance(error, sqlite3.Error):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    return code & 0xFF == SQLITE_READONLY if code is not None else "readonly database" in str(error)


class WriteGuard:
    """The checks on the engine of the SQLite file `database` (an absolute path), each raising
    DatabaseReadOnly: before a connection is opened (installed by the constructor), before each
    transaction (`before_transaction`, for the engine's `begin` listener to call first), and when
    SQLite refuses a write as read-only. That connection is then dropped, as SQLite keeps a file it
    opened read-only so; and until a write goes through again, each new connection is tried with a
    write rolled back (`after_connect`), so none opened read-only meanwhile (by a read) is kept."""

    def __init__(self, engine: Engine, database: Path) -> None:
        self.database = database
        self.refused = False  # SQLite refused a write as read-only, and no connection has written since
        event.listen(engine, "do_connect", self._before_opening)
        event.listen(engine, "handle_error", self._on_error)

    def before_transaction(self) -> None:
        problem = read_only_problem(self.database)
        if problem is not None:
            raise problem

    def after_connect(self, dbapi_connection: sqlite3.Connection) -> None:
        """Once a connection is set up (autocommit, as the engine's connect listener leaves it)."""
        if not self.refused:
            return
        try:
            dbapi_connection.execute("BEGIN IMMEDIATE")
            try:
                dbapi_connection.execute("CREATE TABLE firmsift_write_probe (x)")  # needs a writable file
            finally:
                dbapi_connection.execute("ROLLBACK")
        except sqlite3.Error as error:
            if refused_as_read_only(error):
                dbapi_connection.close()  # never pooled: closed here, not when collected
                raise self._refusal(error) from error
            raise
        self.refused = False

    def _before_opening(self, _dialect, _record, _cargs, _cparams):  # type: ignore[no-untyped-def]
        self.before_transaction()
        return None  # SQLAlchemy opens the connection as usual

    def _on_error(self, context: ExceptionContext) -> BaseException | None:
        error = context.original_exception
        if not refused_as_read_only(error):
            return None
        self.refused = True
        context.is_disconnect = True
        context.invalidate_pool_on_disconnect = False  # only this connection: the others may be fine
        return self._refusal(error)

    def _refusal(self, error: BaseException) -> DatabaseReadOnly:
        database = self.database
        return read_only_problem(database) or DatabaseReadOnly(
            f"the database is read-only: SQLite refused to write {database} ({error}): make sure its file system "
            f"is mounted read-write and {_files(database)} are writable by this process ({_user()}); {RESUMES}",
            f"SQLite refused to write {database.name}")


def write_state(engine: Engine) -> Callable[[], str] | None:
    """For a process's /readyz: a check saying "ok" or "read-only: what" for the SQLite file the
    engine opens, without touching the database; None for any other database."""
    database = engine.url.database
    if engine.url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    path = Path(database).expanduser().absolute()

    def state() -> str:
        problem = read_only_problem(path)
        return "ok" if problem is None else f"read-only: {problem.what}"

    return state


def _files(database: Path) -> str:
    return f"the folder {database.parent}, {database.name} and its -wal and -shm files"


def _user() -> str:
    uid = os.geteuid()
    try:
        return f"user {pwd.getpwuid(uid).pw_name}, uid {uid}"
    except KeyError:  # a uid without a name (a container run with --user 12345)
        return f"uid {uid}"
