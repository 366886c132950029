"""The first passes over uploaded bodies (JSON checked, CSV opened, a web form read), one at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class BodyPasses:
    """Runs each pass in a thread, one at a time across the app's routes. A pass is pure Python
    under the GIL, so two at once finish no sooner than one after the other; five at once made
    the event loop wait behind each of them in turn for the GIL, and /healthz took 265 ms
    (bench/hostile_batches). One at a time, the loop waits behind one, and the other uploads
    leave the default executor's few threads to the calls that need them."""

    def __init__(self) -> None:
        self._one = asyncio.Semaphore(1)  # bound to the running loop on first wait, not here

    async def run(self, function: Callable[[], T]) -> T:
        async with self._one:
            return await asyncio.to_thread(function)
