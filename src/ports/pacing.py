"""The pacing port: one provider key's shared pacing state, changed by one caller at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from firmsift.domain.pacing import PacingState

T = TypeVar("T")


class PacingStore(Protocol):
    async def update(self, key: str, change: Callable[[PacingState, float], tuple[PacingState, T]]) -> T:
        """Replace `key`'s state (a fresh PacingState if it has none) with what `change(state,
        now)` returns first, and return its second: as one step no other caller of the same key
        (in any process sharing the store) can interleave with. `now` is wall-clock epoch
        seconds, the clock every sharer of the state reads."""
