"""The progress bar `firmsift eval` draws on stderr while candidates answer."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from firmsift.entrypoints.progress_rate import rate_and_eta

WIDTH = 30


class ProgressBar:
    """Answers done, elapsed time, rate and time left: redrawn in place on a terminal; on a pipe or a
    CI log, one line per tenth of the way."""

    def __init__(self, stream: TextIO = sys.stderr, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.clock = stream, clock
        self.started = clock()
        self._last_tenth = -1

    def __call__(self, done: int, total: int) -> None:
        tty = self.stream.isatty()
        tenth = done * 10 // total if total else 10
        if not tty and tenth == self._last_tenth:
            return
        self._last_tenth = tenth
        filled = done * WIDTH // total if total else WIDTH
        bar = "#" * filled + "." * (WIDTH - filled)
        elapsed = self.clock() - self.started
        rate, eta = rate_and_eta(done, elapsed, total - done)
        pace = f", {rate:.1f}/s, ETA {eta}" if done < total else f", {rate:.1f}/s"
        line = f"[{bar}] {done}/{total} answers, {elapsed:.0f}s{pace}"
        finished = done == total
        self.stream.write(("\r" if tty else "") + line + ("\n" if finished or not tty else ""))
        self.stream.flush()
