"""ProcessGroup with real child processes (small Python programs): stop, restart, usage exit, kill."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from firmsift.entrypoints.cli.process_group import ChildCommand, ProcessGroup

SLEEPER = "import time\nwhile True: time.sleep(0.05)"
DEAF = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(0.05)"


def child(program: str, *args: str) -> ChildCommand:
    return ChildCommand([sys.executable, "-c", program, *args], dict(os.environ))


def run_in_thread(group: ProcessGroup) -> tuple[threading.Thread, list[int]]:
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(group.run()))
    thread.start()
    return thread, codes


def wait_for(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
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


def test_a_copy_that_ignores_sigterm_is_killed_after_the_grace_and_the_exit_code_says_so() -> None:
    command = ChildCommand([sys.executable, "-c", DEAF], dict(os.environ))
    group = ProcessGroup([command], grace_seconds=0.2, kill_after_grace=0.3)
    thread, codes = run_in_thread(group)
    wait_for(lambda: len(group.pids) == 1)
    time.sleep(0.5)  # let it install its handler
    pid = group.pids[0]
    began = time.monotonic()
    group.request_stop()
    thread.join(30)
    assert codes == [1]
    assert not alive(pid)
    assert time.monotonic() - began < 5
