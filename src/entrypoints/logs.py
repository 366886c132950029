"""Structured logging: one JSON object per line on stderr, carrying job_id/domain when given."""

from __future__ import annotations

import json
import logging
import sys
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


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
