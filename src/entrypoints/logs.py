"""Structured logging: one JSON object per line on stderr, carrying job_id/domain when given;
repeated warnings and errors are rate-limited."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

# Attributes every LogRecord has; anything else came from `extra=` and is worth printing.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "taskName", "color_message",  # uvicorn's terminal-coloured copy of the message
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        # Only plain values: libraries (litellm) tag records with sentinel objects of their own.
        entry.update({k: v for k, v in vars(record).items()
                      if k not in _STANDARD and isinstance(v, (str, int, float, bool, type(None)))})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


@dataclass
class _Window:
    started: float
    count: int = 0
    suppressed: int = 0


class RepeatLimiter(logging.Filter):
    """Lets through at most `burst` warnings and errors of one kind (logger, level, message
    template, exception type) per `window` seconds, so a fault that repeats thousands of times a
    second (a descriptor limit, a flood of malformed requests) costs a few lines, not a full
    disk. The first line of a kind in a new window carries `suppressed_repeats`: how many were
    dropped in the window before. Lower levels pass untouched."""

    def __init__(self, *, burst: int = 20, window: float = 10.0, level: int = logging.WARNING,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst, self.window, self.level, self.clock = burst, window, level, clock
        self._windows: dict[tuple[str, int, str, str], _Window] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < self.level:
            return True
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        key = (record.name, record.levelno, str(record.msg), error)  # the template: kinds are few
        now = self.clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window.started >= self.window:
                if window is not None and window.suppressed:
                    record.suppressed_repeats = window.suppressed
                window = self._windows[key] = _Window(started=now)
            window.count += 1
            if window.count > self.burst:
                window.suppressed += 1
                return False
        return True


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RepeatLimiter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # alembic says two lines a start and one per revision applied (25 on a new database, burying the
    # start-up's own lines): firmsift says one line of what the upgrade did (database_wait.py).
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm", "uvicorn.access", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
