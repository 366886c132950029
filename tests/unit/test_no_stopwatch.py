"""No test measures how long something took: the suite must pass beside a CPU hog, and speed goals
live in bench/. A test checks events, counters and the delays the code asked for
(tests/support/waiting.py bounds a wait that must end by itself, as a safety net)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# An assertion on a duration read off the wall clock: `elapsed < 4`, `time.monotonic() - started < 5`,
# `time.perf_counter() - t0`, `time.time() - ...`. A deadline checked while polling
# (`time.monotonic() < deadline`) is a safety net, not a measure, and does not match.
STOPWATCH = re.compile(r"^\s*assert\b.*(\belapsed\b|perf_counter\(\)|time\.time\(\)|monotonic\(\)\s*-)")


def stopwatch_assertions(text: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if STOPWATCH.search(line)]


def test_no_test_asserts_a_wall_clock_duration() -> None:
    found = {path.relative_to(TESTS): lines for path in sorted(TESTS.rglob("*.py"))
             if "realserver" not in path.parts and (lines := stopwatch_assertions(path.read_text()))}

    assert not found, f"assertions on wall-clock durations (check events or counters instead): {found}"


def test_the_check_tells_a_duration_from_a_deadline() -> None:
    text = ("assert elapsed < 4.0\n    assert time.monotonic() - started < 5\nassert time.perf_counter() - t < 1\n"
            "        assert time.monotonic() < deadline, 'never'\nassert seconds_left > 0\n")

    assert stopwatch_assertions(text) == [1, 2, 3]
