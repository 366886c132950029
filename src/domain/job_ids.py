"""Job ids: UUIDs of version 7 (RFC 9562), which sort in the order they were made."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable


class TimeOrderedIds:
    """Makes UUID version 7 text: 48 bits of Unix time in milliseconds, then a 12-bit counter
    within the millisecond, then 62 random bits. A batch's thousands of jobs thus land at the end
    of every index keyed by job id (jobs, job_domains, batch_jobs, the queue's) instead of at
    random places in it: SQLite and PostgreSQL touch and write far fewer pages for them."""

    def __init__(self, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._clock_ns = clock_ns
        self._lock = threading.Lock()  # ids are made on the event loop and in worker threads
        self._millis = self._counter = 0

    def __call__(self) -> str:
        with self._lock:
            millis = self._clock_ns() // 1_000_000
            if millis > self._millis:
                self._millis, self._counter = millis, 0
            elif self._counter < 0xFFF:
                self._counter += 1
            else:  # 4,096 ids in one millisecond, or the clock went back: borrow the next millisecond
                self._millis, self._counter = self._millis + 1, 0
            millis, counter = self._millis, self._counter
        value = (millis << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62
                 | int.from_bytes(os.urandom(8)) & (1 << 62) - 1)
        text = f"{value:032x}"
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
