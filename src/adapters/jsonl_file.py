"""Append-only JSON Lines files: each record durable once written, a torn last line tolerated."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class JsonlFileError(ValueError):
    """A JSON Lines file is damaged somewhere other than a torn last line."""


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every record in the file (none if it does not exist). A last line cut short by an
    interrupted write is skipped; any other unreadable line is an error naming file and line."""
    if not path.exists():
        return
    lines = path.read_bytes().split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            if number == len(lines):  # no newline after it: the write was interrupted
                log.warning("skipping a torn last line", extra={"path": str(path), "line": number})
                continue
            raise JsonlFileError(f"{path}: line {number} is not a JSON record") from None
        if not isinstance(record, dict):
            raise JsonlFileError(f"{path}: line {number} is not a JSON object")
        yield record


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one record as one line; on disk (for a crash of this process) once this returns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    # O_APPEND: concurrent runs appending to the same file never interleave within a line.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(descriptor, line.encode("utf-8"))
    finally:
        os.close(descriptor)
