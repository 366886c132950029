"""An asyncio event loop on virtual time: whenever nothing is ready to run and no I/O is waiting,
its clock jumps to the next timer instead of sleeping until it. Heartbeats, visibility timeouts
and grace periods then pass at once, in the same order and by the same arithmetic as on the wall
clock. For code that does no blocking work in threads (the in-memory graph): a thread's progress
is not waited for, so virtual time would outrun it.

Use it through anyio's pytest plugin: `anyio_backend` returning VIRTUAL_TIME_BACKEND; give the
code under test `loop_clock` wherever it reads the time (the container's `clock` provider)."""

from __future__ import annotations

import asyncio
import selectors
from typing import Any


class _JumpingSelector:
    """The loop's selector, except that a wait with a timeout and nothing to read advances the
    loop's clock by that timeout and returns at once. A wait without a timeout (no timer at
    all) still blocks on real I/O, as the loop would."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._selector.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            return self._selector.select(None)
        assert self.loop is not None
        self.loop.advance(timeout)
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._selector, name)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose time() starts at `start` and moves only when the loop would
    otherwise sleep (or when a test calls advance)."""

    def __init__(self, start: float = 1_000.0) -> None:
        selector = _JumpingSelector()
        super().__init__(selector)  # type: ignore[arg-type]
        selector.loop = self
        self._now = start

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("virtual time only moves forward")
        self._now += seconds


def loop_clock() -> float:
    """The running event loop's clock: a container's `clock` for code run on a VirtualTimeLoop."""
    return asyncio.get_running_loop().time()


VIRTUAL_TIME_BACKEND = ("asyncio", {"loop_factory": VirtualTimeLoop})
