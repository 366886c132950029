"""The virtual-time event loop the worker tests run on: long waits pass at once, in order."""

import asyncio
import time

import pytest

from tests.support.virtual_time import VIRTUAL_TIME_BACKEND, VirtualTimeLoop, loop_clock

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> object:
    return VIRTUAL_TIME_BACKEND


async def test_an_hour_of_timers_passes_at_once_and_in_order() -> None:
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        woke.append((name, loop_clock()))

    started_wall, started = time.monotonic(), loop_clock()
    await asyncio.gather(sleeper("late", 3600), sleeper("early", 0.25), sleeper("middle", 60))
    assert [name for name, _at in woke] == ["early", "middle", "late"]
    assert [round(at - started, 6) for _name, at in woke] == [0.25, 60, 3600]
    assert time.monotonic() - started_wall < 1


async def test_a_timeout_fires_on_virtual_time() -> None:
    started = loop_clock()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.Event().wait(), 30)
    assert loop_clock() - started == pytest.approx(30)


def test_virtual_time_never_moves_backwards() -> None:
    loop = VirtualTimeLoop(start=5.0)
    try:
        loop.advance(2.5)
        assert loop.time() == 7.5
        with pytest.raises(ValueError, match="forward"):
            loop.advance(-1)
    finally:
        loop.close()
