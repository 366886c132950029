"""In-memory pacing state (tests, and a process that shares its pacing with nobody)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from firmsift.domain.pacing import PacingState

T = TypeVar("T")


class InMemoryPacing:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.states: dict[str, PacingState] = {}

    async def update(self, key: str, change: Callable[[PacingState, float], tuple[PacingState, T]]) -> T:
        # No await between the read and the write: on one event loop, nothing interleaves.
        state, result = change(self.states.get(key, PacingState()), self.clock())
        self.states[key] = state
        return result
