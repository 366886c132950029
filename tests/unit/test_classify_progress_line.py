"""`firmsift classify`'s progress off a terminal: a line every so often, never one that repeats the
final count just before it (the last row's progress line was the final count, said twice)."""

from __future__ import annotations

import io

from firmsift.entrypoints.cli.classify_client import Tally
from firmsift.entrypoints.cli.classify_report import ProgressLine
from firmsift.entrypoints.cli.classify_rows import Row
from tests.support.clocks import Clock


def test_off_a_terminal_the_last_rows_count_is_said_once_by_the_final_line() -> None:
    stream, clock, tally = io.StringIO(), Clock(), Tally()
    progress = ProgressLine(stream, every=10, clock=clock)
    for number in range(3):
        clock.now += 11  # each row after the interval: each one due for a line
        tally.answered += 1
        progress(Row(number + 2, ["a.com"], "a.com", "a.com"), tally)
    progress.finish(tally)
    assert stream.getvalue().splitlines() == [
        "1 rows: 1 answered, 0 failed, 0 rejected",
        "2 rows: 2 answered, 0 failed, 0 rejected",
        "3 rows: 3 answered, 0 failed, 0 rejected; LLM cost 0 USD",
    ]


def test_a_single_row_after_a_long_wait_gets_the_final_line_only() -> None:
    stream, clock, tally = io.StringIO(), Clock(), Tally()
    progress = ProgressLine(stream, every=10, clock=clock)
    clock.now = 31  # the answer took half a minute
    tally.answered = 1
    progress(Row(2, ["a.com"], "a.com", "a.com"), tally)
    progress.finish(tally)
    assert stream.getvalue().splitlines() == ["1 rows: 1 answered, 0 failed, 0 rejected; LLM cost 0 USD"]
