"""The first passes over uploaded bodies run one at a time, in threads, off the event loop."""

from __future__ import annotations

import asyncio
import threading
import time

from firmsift.entrypoints.http.body_passes import BodyPasses


def test_passes_run_one_at_a_time_off_the_event_loop() -> None:
    inside = 0
    most_inside = 0
    threads: set[int] = set()
    lock = threading.Lock()

    def a_pass(number: int) -> int:
        nonlocal inside, most_inside
        with lock:
            inside += 1
            most_inside = max(most_inside, inside)
            threads.add(threading.get_ident())
        for _ in range(2000):  # hands the GIL over again and again: a second pass at once would run here
            time.sleep(0)
        with lock:
            inside -= 1
        return number

    async def five_at_once() -> list[int]:
        passes = BodyPasses()
        return await asyncio.gather(*(passes.run(lambda number=number: a_pass(number)) for number in range(5)))

    assert asyncio.run(five_at_once()) == [0, 1, 2, 3, 4]
    assert most_inside == 1
    assert threading.get_ident() not in threads


def test_a_failing_pass_lets_the_next_one_run() -> None:
    def failing() -> None:
        raise ValueError("not JSON")

    async def both() -> tuple[object, str]:
        passes = BodyPasses()
        first, second = await asyncio.gather(passes.run(failing), passes.run(lambda: "read"), return_exceptions=True)
        return first, second

    first, second = asyncio.run(both())
    assert isinstance(first, ValueError) and second == "read"
