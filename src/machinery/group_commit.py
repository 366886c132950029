"""Group commit: items that arrive while a group is being written wait and share the next write,
so many concurrent requests cost one transaction (one commit, one queue call) instead of one each."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

# What a write answers: None when every item was written, else each item's failure (None: written).
Outcomes = Sequence[BaseException | None] | None


@dataclass
class _Waiting(Generic[T]):
    """One event loop's items not yet written, and the task writing them."""

    items: list[tuple[T, asyncio.Future[None]]] = field(default_factory=list)
    writer: asyncio.Task[None] | None = None


class GroupCommit(Generic[T]):
    """Runs `write(items)` for each group of waiting items, one group at a time: an item
    submitted while a group is being written goes into the next, with up to `most` items a group.
    An idle caller waits for nothing but its own write."""

    def __init__(self, write: Callable[[list[T]], Awaitable[Outcomes]], *, most: int) -> None:
        if most < 1:
            raise ValueError("most must be at least 1")
        self._write = write
        self._most = most
        # Per event loop: a future and a task serve the loop that made them only.
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Waiting[T]] = weakref.WeakKeyDictionary()

    async def submit(self, item: T) -> None:
        """Return once `item` is written, or raise its failure (what the write raised, or what it
        answered for this item). A caller cancelled before its group was taken leaves its item
        unwritten; once taken, the group is written whatever becomes of its callers."""
        loop = asyncio.get_running_loop()
        waiting = self._loops.setdefault(loop, _Waiting())
        done: asyncio.Future[None] = loop.create_future()
        waiting.items.append((item, done))
        if waiting.writer is None or waiting.writer.done():
            waiting.writer = loop.create_task(self._write_waiting(waiting))
        await done

    async def _write_waiting(self, waiting: _Waiting[T]) -> None:
        while waiting.items:
            taken = [(item, done) for item, done in waiting.items[:self._most] if not done.cancelled()]
            del waiting.items[:self._most]
            if not taken:
                continue
            try:
                outcomes = await self._write([item for item, _ in taken])
            except Exception as error:  # each caller of the group gets the failure
                outcomes = [error] * len(taken)
            except BaseException:
                # The loop is shutting down: no caller may wait for ever.
                for _, done in [*taken, *waiting.items]:
                    done.cancel()
                waiting.items.clear()
                raise
            for (_, done), failure in zip(taken, outcomes or [None] * len(taken), strict=True):
                if done.done():
                    continue
                if failure is None:
                    done.set_result(None)
                else:
                    done.set_exception(failure)
