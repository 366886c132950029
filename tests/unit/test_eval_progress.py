"""The eval progress bar: done/total, elapsed, rate and time left; one line per tenth off a terminal."""

from __future__ import annotations

import io

from firmsift.entrypoints.eval.progress import ProgressBar
from firmsift.entrypoints.progress_rate import duration_text, rate_and_eta
from tests.support.clocks import Clock


def test_off_a_terminal_one_line_per_tenth_with_rate_and_time_left() -> None:
    out, clock = io.StringIO(), Clock(100.0)
    bar = ProgressBar(out, clock)
    for done in range(0, 21):
        clock.now = 100.0 + done * 0.5  # 2 answers a second
        bar(done, 20)
    lines = out.getvalue().splitlines()
    assert len(lines) == 11  # 0/20, 2/20, ... 20/20
    assert lines[1] == "[###...........................] 2/20 answers, 1s, 2.0/s, ETA 0m09s"
    assert lines[-1] == "[##############################] 20/20 answers, 10s, 2.0/s"


def test_before_any_answer_the_time_left_is_unknown() -> None:
    out = io.StringIO()
    ProgressBar(out, Clock(100.0))(0, 5)
    assert out.getvalue() == "[..............................] 0/5 answers, 0s, 0.0/s, ETA unknown\n"


def test_durations_read_as_minutes_and_seconds_or_hours_and_minutes() -> None:
    assert [duration_text(s) for s in (0, 7.4, 750, 7500)] == ["0m00s", "0m07s", "12m30s", "2h05m"]
    assert rate_and_eta(30, 10.0, 60) == (3.0, "0m20s")
