"""Start-up against a database server that is not there yet: wait with backoff, one log line per
attempt, then migrate; give up with one clear line after FIRMSIFT_DATABASE_WAIT_SECONDS.

A pending upgrade is applied by a forked child process, so the long-running process never
imports Alembic and Mako (~9-12 MiB it would keep for its whole life: the API's memory budget is
100 MB). If the child fails, the upgrade is run here instead, so the failure is reported (or
waited out) exactly as before. Where fork is not available, the upgrade runs here."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from firmsift.entrypoints.wiring.container import Container
from firmsift.ports.infrastructure_errors import DatabaseUnavailable

FIRST_DELAY = 0.5
MAX_DELAY = 15.0
MAX_REASON = 300
log = logging.getLogger(__name__)


class DatabaseUnreachable(RuntimeError):
    """The database did not answer within the wait allowed at start-up (exit code 1)."""


def migrate_when_reachable(container: Container, *, sleep: Callable[[float], None] = time.sleep,
                           clock: Callable[[], float] = time.monotonic) -> None:
    """Bring the schema up to date as soon as the database answers. A database server (PostgreSQL)
    may start after the processes that use it, or be restarting: the API and workers wait for it,
    as their orchestrator would restart them otherwise, but without a crash loop of tracebacks.
    A SQLite file that cannot be opened will not appear by waiting: that fails at once."""
    settings = container.settings()
    waits = container.engine().url.get_backend_name() != "sqlite"
    deadline = clock() + settings.database_wait_seconds
    delay = FIRST_DELAY
    attempt = 1
    while True:
        try:
            _migrate(container)
        except DatabaseUnavailable as error:
            reason = _reason(error)
            remaining = deadline - clock()
            if not waits:
                raise  # a SQLite file that cannot be opened: a configuration error, said as such (exit 2)
            if remaining <= 0:
                waited = f" after {attempt} attempts" if attempt > 1 else ""
                raise DatabaseUnreachable(f"the database is unreachable{waited}: {reason}") from None
            pause = min(remaining, random.uniform(delay / 2, delay))
            log.warning("database unreachable at start-up (attempt %d): %s; retrying in %.1fs", attempt, reason, pause,
                        extra={"attempt": attempt})
            sleep(pause)
            delay = min(delay * 2, MAX_DELAY)
            attempt += 1
            continue
        if attempt > 1:
            log.info("database reachable after %d attempts", attempt)
        return


def _migrate(container: Container) -> None:
    if container.schema_is_current():  # one query; DatabaseUnavailable while the server is away
        return
    import multiprocessing  # here: the processes that never upgrade do not load it

    if "fork" in multiprocessing.get_all_start_methods():
        child = multiprocessing.get_context("fork").Process(target=_upgrade_in_child, args=(container,),
                                                             name="firmsift-db-upgrade")
        child.start()
        child.join()
        if child.exitcode == 0:
            return
        log.warning("the schema upgrade in a child process failed (exit %s); upgrading in this process",
                    child.exitcode)
    upgrade_and_say(container)


def upgrade_and_say(container: Container) -> None:
    """Bring the schema up to date; one INFO line says what that did, when it did anything."""
    applied = container.migrate()
    if applied:
        log.info(f"database schema upgraded to revision {applied[-1].version:04d} ({applied[-1].name}): "
                 f"{len(applied)} revision(s) applied")


def _upgrade_in_child(container: Container) -> None:
    """The forked child's work: the upgrade on connections of its own (the parent's pooled ones
    stay the parent's), then exit; an error exits non-zero, with its first line logged instead of
    a traceback, and the parent upgrades itself (reporting or waiting out the error as before)."""
    container.engine().dispose(close=False)
    try:
        upgrade_and_say(container)
    except Exception as error:  # noqa: BLE001 - any failure: the parent's own attempt reports it
        log.warning("schema upgrade in the child process: %s", _reason(error))
        raise SystemExit(1) from None


def _reason(error: BaseException) -> str:
    """The error's first line (a driver's names host and port, never the password), or its type
    when it says nothing."""
    lines = str(error).strip().splitlines()
    return lines[0][:MAX_REASON] if lines else type(error).__name__
