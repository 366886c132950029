"""Append-only JSON Lines files: each record durable once written; a torn line costs only itself."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class JsonlFileError(ValueError):
    """A JSON Lines file holds something other than our records."""


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every record in the file (none if it does not exist).

    A line that is not JSON (cut short by an interrupted write) is skipped with a warning: both
    files built on this are records of work done, and a lost line only means that work is done
    again. A JSON line that is not an object means the file is not ours: that is an error.
    """
    if not path.exists():
        return
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            log.warning("skipping an unreadable line (an interrupted write?)", extra={"path": str(path), "line": number})
            continue
        if not isinstance(record, dict):
            raise JsonlFileError(f"{path}: line {number} is not a JSON object: is this the right file?")
        yield record


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one record as one line, on disk (fsync) once this returns.

    A line torn by an earlier interrupted write is closed first, so the damage stays one
    skipped line instead of merging with this record into a line no run could read again.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    # O_APPEND: concurrent runs appending to the same file never interleave within a line.
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            line = b"\n" + line
        view = memoryview(line)
        while view:
            view = view[os.write(descriptor, view):]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
