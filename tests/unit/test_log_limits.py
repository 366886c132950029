"""The log's repeat limiter: a fault repeating thousands of times costs a few lines and a count."""

import logging

from firmsift.entrypoints.logs import RepeatLimiter


def record(message: str, level: int = logging.ERROR, name: str = "asyncio") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, (), None)


def test_a_repeated_error_passes_burst_times_per_window_then_reports_how_many_were_dropped() -> None:
    now = [0.0]
    limiter = RepeatLimiter(burst=3, window=10, clock=lambda: now[0])
    passed = [limiter.filter(record("socket.accept() out of system resource")) for _ in range(1000)]
    assert passed.count(True) == 3
    other = record("another fault")
    assert limiter.filter(other)  # other kinds have their own allowance
    now[0] = 10.0
    next_window = record("socket.accept() out of system resource")
    assert limiter.filter(next_window)
    assert next_window.suppressed_repeats == 997


def test_the_template_not_the_arguments_decides_the_kind() -> None:
    limiter = RepeatLimiter(burst=2, window=10, clock=lambda: 0.0)
    records = [logging.LogRecord("x", logging.WARNING, __file__, 1, "refused: %d open", (n,), None) for n in range(5)]
    assert [limiter.filter(r) for r in records] == [True, True, False, False, False]


def test_info_and_debug_are_never_limited() -> None:
    limiter = RepeatLimiter(burst=1, window=10, clock=lambda: 0.0)
    assert all(limiter.filter(record("job finished", logging.INFO)) for _ in range(100))
