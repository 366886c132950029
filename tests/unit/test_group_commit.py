"""Group commit: concurrent items share a write, one group at a time, and each caller learns
its own group's outcome."""

from __future__ import annotations

import asyncio

import pytest

from firmsift.machinery.group_commit import GroupCommit

pytestmark = pytest.mark.anyio


class Recorder:
    """A write that records its groups, can be held until released, and can be told to fail a
    whole group (`failing`) or single items (`refused`)."""

    def __init__(self) -> None:
        self.groups: list[list[int]] = []
        self.failing: set[int] = set()
        self.refused: set[int] = set()
        self.release = asyncio.Event()
        self.release.set()

    async def write(self, items: list[int]) -> list[BaseException | None]:
        await self.release.wait()
        if self.failing & set(items):
            raise RuntimeError(f"refused {items}")
        self.groups.append(items)
        return [ValueError(item) if item in self.refused else None for item in items]


async def test_items_submitted_together_are_written_in_one_group_in_order() -> None:
    recorder = Recorder()
    together = GroupCommit(recorder.write, most=64)
    await asyncio.gather(*(together.submit(n) for n in range(10)))
    assert recorder.groups == [list(range(10))]


async def test_items_arriving_during_a_write_go_into_the_next_group_of_at_most_most() -> None:
    recorder = Recorder()
    recorder.release.clear()
    together = GroupCommit(recorder.write, most=3)
    first = asyncio.create_task(together.submit(0))
    await asyncio.sleep(0.05)  # the first group, [0], is being written
    later = [asyncio.create_task(together.submit(n)) for n in range(1, 6)]
    await asyncio.sleep(0.05)
    recorder.release.set()
    await asyncio.gather(first, *later)
    assert recorder.groups == [[0], [1, 2, 3], [4, 5]]


async def test_a_failed_write_fails_each_caller_of_its_group_and_no_other() -> None:
    recorder = Recorder()
    recorder.release.clear()
    recorder.failing = {1}
    together = GroupCommit(recorder.write, most=2)
    first = asyncio.create_task(together.submit(0))
    await asyncio.sleep(0.05)
    later = [asyncio.create_task(together.submit(n)) for n in (1, 2, 3)]
    await asyncio.sleep(0.05)
    recorder.release.set()
    outcomes = await asyncio.gather(first, *later, return_exceptions=True)
    assert [type(outcome).__name__ for outcome in outcomes] == ["NoneType", "RuntimeError", "RuntimeError", "NoneType"]
    assert recorder.groups == [[0], [3]]


async def test_a_write_may_fail_single_items_of_its_group() -> None:
    recorder = Recorder()
    recorder.refused = {1}
    together = GroupCommit(recorder.write, most=64)
    outcomes = await asyncio.gather(*(together.submit(n) for n in range(3)), return_exceptions=True)
    assert [type(outcome).__name__ for outcome in outcomes] == ["NoneType", "ValueError", "NoneType"]
    assert recorder.groups == [[0, 1, 2]]


async def test_a_caller_cancelled_before_its_group_was_taken_leaves_its_item_unwritten() -> None:
    recorder = Recorder()
    recorder.release.clear()
    together = GroupCommit(recorder.write, most=64)
    first = asyncio.create_task(together.submit(0))
    await asyncio.sleep(0.05)
    cancelled, kept = asyncio.create_task(together.submit(1)), asyncio.create_task(together.submit(2))
    await asyncio.sleep(0)
    cancelled.cancel()
    recorder.release.set()
    await asyncio.gather(first, kept)
    assert recorder.groups == [[0], [2]]
    assert cancelled.cancelled()


def test_a_group_holds_at_least_one_item() -> None:
    with pytest.raises(ValueError):
        GroupCommit(Recorder().write, most=0)
