"""Single-flight: concurrent requests for the same key share one computation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class InFlight(Generic[T]):
    """Runs at most one computation per key at a time; later callers await the first one."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[T]] = {}

    async def run(self, key: Hashable, compute: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """(result, True) for the caller that computed it, (result, False) for those who waited."""
        running = self._running.get(key)
        if running is not None:
            return await asyncio.shield(running), False
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            result = await compute()
        except BaseException as error:
            future.set_exception(error)
            # Mark retrieved so an exception nobody waited for is not reported as lost.
            future.exception()
            raise
        else:
            future.set_result(result)
            return result, True
        finally:
            del self._running[key]
