"""Start-up against a database server that is not there yet: wait with backoff, one log line per
attempt, then migrate; give up with one clear line after FIRMSIFT_DATABASE_WAIT_SECONDS."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from firmsift.entrypoints.container import Container
from firmsift.ports.database_errors import DatabaseUnavailable

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
            container.migrate()
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


def _reason(error: DatabaseUnavailable) -> str:
    """The driver's first line (it names host and port, never the password)."""
    return str(error).strip().splitlines()[0][:MAX_REASON]
