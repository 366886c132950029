"""What `firmsift classify` says on stderr while it runs: rejected rows, cells with several host names,
failed domains (once each), progress, and the final count."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import TextIO

from firmsift.entrypoints.cli.classify_client import Tally
from firmsift.entrypoints.cli.classify_rows import Row
from firmsift.entrypoints.progress_rate import rate_and_eta


class ProgressLine:
    """Progress on stderr: rewritten in place on a terminal (at most 5 times a second), one line every
    `every` seconds otherwise, so a million rows do not make a million lines. Off a terminal a line
    is written only once a later row shows the run goes on: the last row's counts are the final
    count's, said once by `finish`, not also as a progress line just before it."""

    def __init__(self, stream: TextIO | None = None, every: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every = 0.2 if self.tty else every
        self.clock = clock
        self._last = clock()
        self._shown = False
        self._held: str | None = None  # off a terminal: the line due, written when another row comes

    def __call__(self, row: Row, tally: Tally) -> None:
        if self._held is not None:
            self.stream.write(self._held + "\n")
            self.stream.flush()
            self._held = None
        now = self.clock()
        if now - self._last < self.every:
            return
        self._last, self._shown = now, True
        if not self.tty:
            self._held = _counts(tally)
            return
        self.stream.write("\r" + _counts(tally))
        self.stream.flush()

    def finish(self, tally: Tally) -> None:
        if self.tty and self._shown:
            self.stream.write("\r\033[K")
        self.stream.write(f"{_counts(tally)}; {_spend(tally)}\n")
        self.stream.flush()


class BatchProgress:
    """One progress line for a whole file's batches: domains finished of the total, the rate since the
    line was first shown, and the time left at that rate. Rewritten in place on a terminal; one line
    every `every` seconds otherwise, and the last one when everything has finished."""

    def __init__(self, stream: TextIO | None = None, every: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every, self.clock = every, clock
        self._start: tuple[float, int] | None = None
        self._last = float("-inf")

    def show(self, finished: int, total: int) -> None:
        now = self.clock()
        if self._start is None:
            self._start = (now, finished)
        complete = finished >= total
        if not self.tty and not complete and now - self._last < self.every:
            return
        self._last = now
        began, finished_then = self._start
        rate, eta = rate_and_eta(finished - finished_then, now - began, total - finished)
        share = f" ({100 * finished // total}%)" if total else ""
        text = f"batches: {finished}/{total} domains{share}, {rate:.1f}/s, " + ("done" if complete else f"ETA {eta}")
        end = "\n" if complete or not self.tty else ""
        self.stream.write(("\r\033[K" if self.tty else "") + text + end)
        self.stream.flush()


def _counts(tally: Tally) -> str:
    return f"{tally.rows} rows: {tally.answered} answered, {tally.failed} failed, {tally.rejected} rejected"


def _spend(tally: Tally) -> str:
    """What the run's jobs spent on the LLM: "LLM cost 0.0123 USD", "+ 2 domains of unknown cost"."""
    usd = format(tally.cost_usd, ".12f").rstrip("0").rstrip(".")
    unknown = tally.cost_unknown
    return f"LLM cost {usd} USD" + (f" + {unknown} domain{'s' if unknown != 1 else ''} of unknown cost" if unknown else "")


class RowReporter:
    """Per-row messages on stderr: rejected rows, cells that held several host names, failed domains
    (once each); then the progress line."""

    def __init__(self, where: str, progress: ProgressLine) -> None:
        self.where, self.progress = where, progress
        self._reported: set[str] = set()

    def __call__(self, row: Row, tally: Tally) -> None:
        label = f"{self.where} {row.line}"
        if row.domain is None:
            self._say(f"{label}: rejected {json.dumps(row.cell, ensure_ascii=False)}: {row.error}")
        elif row.taken is not None and row.taken.others:
            self._say(f"{label}: took {row.taken.host} from {json.dumps(row.cell, ensure_ascii=False)} "
                      f"(not used: {', '.join(row.taken.others)})")
        if row.status == "FAILED" and row.domain and row.domain not in self._reported:
            self._reported.add(row.domain)
            self._say(f"{label}: failed {row.domain}: {(row.result or {}).get('error') or 'no error given'}")
        self.progress(row, tally)

    def _say(self, message: str) -> None:
        prefix = "\r\033[K" if self.progress.tty else ""
        print(prefix + message, file=sys.stderr)
