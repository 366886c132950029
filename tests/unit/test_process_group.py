"""ProcessGroup with real child processes (small Python programs): stop, restart, usage exit, kill."""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from firmsift.entrypoints.cli.process_group import POLL_SECONDS, ChildCommand, ProcessGroup
from tests.support.waiting import HANG_SECONDS

SLEEPER = "import time\nwhile True: time.sleep(0.05)"
# Ignores SIGTERM, then says so by writing its pid to the file named by its argument.
DEAF = ("import os, pathlib, signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))\nwhile True: time.sleep(0.05)")


def child(program: str, *args: str) -> ChildCommand:
    return ChildCommand([sys.executable, "-c", program, *args], dict(os.environ))


def run_in_thread(group: ProcessGroup) -> tuple[threading.Thread, list[int]]:
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(group.run()))
    thread.start()
    return thread, codes


def wait_for(predicate, timeout: float = HANG_SECONDS) -> None:  # type: ignore[no-untyped-def]
    """Poll until `predicate` holds; `timeout` only turns a hang into a failure."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")


def test_every_copy_runs_until_stopped_and_then_ends_with_exit_0() -> None:
    group = ProcessGroup([child(SLEEPER), child(SLEEPER), child(SLEEPER)], grace_seconds=5)
    thread, codes = run_in_thread(group)
    wait_for(lambda: len(group.pids) == 3)
    pids = group.pids
    group.request_stop()
    thread.join(30)
    assert codes == [0]
    assert not any(alive(pid) for pid in pids)


def test_a_copy_that_dies_is_restarted_and_its_siblings_keep_running(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    # Each run appends its pid; the first run then exits 1 at once, every later run sleeps.
    program = ("import os, pathlib, sys, time\nm = pathlib.Path(sys.argv[1])\nfirst = not m.exists()\n"
               "with m.open('a') as f: f.write(f'{os.getpid()}\\n')\n"
               "if first: sys.exit(1)\nwhile True: time.sleep(0.05)")
    group = ProcessGroup([child(SLEEPER), child(program, str(runs))], grace_seconds=5)
    thread, codes = run_in_thread(group)
    wait_for(lambda: len(group.pids) == 2)
    sibling = group.pids[0]
    wait_for(lambda: runs.exists() and len(runs.read_text().split()) == 2)  # back after its 1 s delay
    second_run = int(runs.read_text().split()[1])
    wait_for(lambda: group.pids == [sibling, second_run])
    group.request_stop()
    thread.join(30)
    assert codes == [0]
    assert not alive(second_run) and not alive(sibling)


def test_a_copy_exiting_with_a_usage_error_stops_the_group_with_exit_2() -> None:
    group = ProcessGroup([child(SLEEPER), child("import time, sys\ntime.sleep(0.3)\nsys.exit(2)")], grace_seconds=5)
    thread, codes = run_in_thread(group)
    wait_for(lambda: len(group.pids) == 2)
    sibling = group.pids[0]
    thread.join(30)
    assert codes == [2]
    assert not alive(sibling)


class SteppedTime:
    """The group's clock and sleep: the clock moves only by the sleeps the group asks for (each
    also yields a moment of real time, for the children to run), and every sleep is recorded.
    `on_sleep` runs inside each sleep, on the group's own thread."""

    def __init__(self, on_sleep: Callable[[], object] = lambda: None) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep = on_sleep

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.on_sleep()
        self.now += seconds
        time.sleep(0.01)


def test_a_copy_that_ignores_sigterm_is_killed_after_the_grace_and_the_exit_code_says_so(tmp_path: Path) -> None:
    deaf = tmp_path / "ignoring-sigterm"
    command = ChildCommand([sys.executable, "-c", DEAF, str(deaf)], dict(os.environ))
    stop_requested_after: list[int] = []  # the sleeps of the watch, before the group was asked to stop

    def stop_once_deaf() -> None:
        # Asked from inside the watch's sleep: when it returns, the group stops; every later sleep
        # is the wait for the copy to end.
        if deaf.exists() and deaf.read_text() and not stop_requested_after:
            stop_requested_after.append(len(stepped.sleeps))
            group.request_stop()

    stepped = SteppedTime(on_sleep=stop_once_deaf)
    group = ProcessGroup([command], grace_seconds=0.2, kill_after_grace=0.3, clock=stepped.clock, sleep=stepped.sleep)
    thread, codes = run_in_thread(group)
    thread.join(HANG_SECONDS)
    assert codes == [1]
    assert not alive(int(deaf.read_text()))
    # It waited out the grace and the time after it (0.5 s of the group's clock, in POLL_SECONDS
    # steps) for the copy to end, then killed it: no sooner, no later.
    [watched] = stop_requested_after
    assert stepped.sleeps[watched:] == [POLL_SECONDS] * math.ceil(0.5 / POLL_SECONDS)
