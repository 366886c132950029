"""The virtual-time event loop the worker tests run on: long waits pass at once, in order."""

import asyncio
import selectors
from typing import Any

import pytest

from tests.support.virtual_time import VIRTUAL_TIME_BACKEND, VirtualTimeLoop, loop_clock

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> object:
    return VIRTUAL_TIME_BACKEND


class BlockingWaits:
    """Spies on the selector under the loop's: each real wait for I/O it is asked to make, with
    its timeout (0 is a look that does not wait)."""

    def __init__(self, selector: selectors.BaseSelector) -> None:
        self.timeouts: list[float | None] = []
        self._select = selector.select

    def __call__(self, timeout: float | None = None) -> Any:
        self.timeouts.append(timeout)
        return self._select(timeout)


async def test_an_hour_of_timers_passes_at_once_and_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        woke.append((name, loop_clock()))

    # The only place the loop could really sleep is its selector's wait: the real one it wraps.
    real_selector = asyncio.get_running_loop()._selector._selector  # type: ignore[attr-defined]
    waits = BlockingWaits(real_selector)
    monkeypatch.setattr(real_selector, "select", waits)
    started = loop_clock()
    await asyncio.gather(sleeper("late", 3600), sleeper("early", 0.25), sleeper("middle", 60))
    assert [name for name, _at in woke] == ["early", "middle", "late"]
    assert [round(at - started, 6) for _name, at in woke] == [0.25, 60, 3600]
    assert waits.timeouts and set(waits.timeouts) == {0}  # it looked for I/O, and never waited for it


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
