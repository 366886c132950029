"""Running a helper loop alongside a block of work, stopped cleanly when the block ends."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable


@contextlib.asynccontextmanager
async def alongside(loop: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
    """Run `loop()` as a task for the duration of the block (a heartbeat, a lease renewal)."""
    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
