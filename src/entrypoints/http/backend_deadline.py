"""The deadline every request gives the database and the queue."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

from firmsift.entrypoints.http.errors import BackendUnavailable


def backend_deadline(seconds: float) -> Callable[[], AbstractAsyncContextManager[None]]:
    """A partitioned database or queue answers nothing for minutes: 503 after `seconds` instead."""

    @contextlib.asynccontextmanager
    async def within() -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(seconds):
                yield
        except TimeoutError:
            raise BackendUnavailable(f"no answer from the database or queue within {seconds:g}s") from None

    return within
