"""Waiting in tests without timing them.

A test checks what happened (events, counters, the delays the code asked for), never how long it
took: the suite must pass beside a CPU hog, and speed goals live in bench/. Where a test waits for
something that must end on its own (a timeout firing, a wake-up, a process exiting), HANG_SECONDS
bounds the wait so that a broken build fails the test instead of hanging the suite: a safety net
far beyond any loaded machine, never a figure the behaviour is measured against."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import anyio

HANG_SECONDS = 60.0


def no_hang() -> AbstractContextManager[anyio.CancelScope]:
    """`with no_hang():` around an await that must end by itself: past HANG_SECONDS it is a hang,
    and TimeoutError fails the test."""
    return anyio.fail_after(HANG_SECONDS)


async def eventually(predicate: Callable[[], object], what: str) -> None:
    """Poll `predicate` on the event loop until it holds; past HANG_SECONDS, fail saying `what`
    never happened."""
    try:
        with no_hang():
            while not predicate():
                await anyio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"{what}: not within {HANG_SECONDS:g}s") from None
