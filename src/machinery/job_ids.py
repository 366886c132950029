"""Making job ids: the clock, a lock and randomness around the id's layout (domain/job_ids.py)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from firmsift.domain.job_ids import next_stamp, uuid7


class TimeOrderedIds:
    """Makes UUID version 7 text (domain/job_ids.py): 48 bits of Unix time in milliseconds, then a
    12-bit counter within the millisecond, then 62 random bits. A batch's thousands of jobs thus
    land at the end of every index keyed by job id (jobs, job_domains, batch_jobs, the queue's)
    instead of at random places in it: SQLite and PostgreSQL touch and write far fewer pages for them."""

    def __init__(self, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._clock_ns = clock_ns
        self._lock = threading.Lock()  # ids are made on the event loop and in worker threads
        self._stamp = (0, 0)  # the (milliseconds, counter) of the last id made

    def __call__(self) -> str:
        with self._lock:
            self._stamp = next_stamp(self._stamp, self._clock_ns() // 1_000_000)
            millis, counter = self._stamp
        return uuid7(millis, counter, int.from_bytes(os.urandom(8)))
