"""N copies of one command under one parent (`firmsift worker --processes N`, `firmsift api --workers N`).

The parent forwards SIGTERM and SIGINT to every copy, waits for them to drain (the shutdown grace,
then SIGKILL), restarts a copy that died on its own with a growing delay, and ends when all have
ended. A copy that exits with the usage/configuration code (2) is not restarted: its siblings
would fail the same way, so the group stops and the parent exits 2.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
RESTART_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
STEADY_SECONDS = 60.0  # a copy that ran this long before dying starts again from the first delay
POLL_SECONDS = 0.2
KILL_AFTER_GRACE_SECONDS = 5.0  # beyond the copies' own shutdown grace, before SIGKILL


@dataclass(frozen=True)
class ChildCommand:
    """How to start one copy: its command line, its environment, and file descriptors it inherits."""

    argv: Sequence[str]
    env: Mapping[str, str]
    pass_fds: Sequence[int] = ()


@dataclass
class _Copy:
    number: int
    command: ChildCommand
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    crashes: int = 0
    restart_at: float | None = None
    pids: list[int] = field(default_factory=list)


class ProcessGroup:
    """Runs `commands` (one per copy) until a stop signal, or until a copy exits with code 2."""

    def __init__(self, commands: Sequence[ChildCommand], *, grace_seconds: float,
                 kill_after_grace: float = KILL_AFTER_GRACE_SECONDS, clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self._copies = [_Copy(number, command) for number, command in enumerate(commands, 1)]
        self._kill_after = grace_seconds + kill_after_grace
        self._clock = clock
        self._sleep = sleep
        self._stop_signal: int | None = None
        self._exit_code = EXIT_OK

    def request_stop(self, signal_number: int = signal.SIGTERM) -> None:
        """Stop every copy (the signal handlers call this; so can a test)."""
        self._stop_signal = self._stop_signal or signal_number

    def run_until_signalled(self) -> int:
        """run(), with SIGTERM and SIGINT stopping the group (from the main thread only)."""
        previous = {sig: signal.signal(sig, lambda number, frame: self.request_stop(number))
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def run(self) -> int:
        """Start every copy and watch them until request_stop(); then stop them all. The exit code:
        0, 2 when a copy exited with 2, 1 when a copy had to be killed or ended badly as it stopped."""
        try:
            for copy in self._copies:
                self._start(copy)
            while self._stop_signal is None:
                self._watch()
                self._sleep(POLL_SECONDS)
        finally:
            self._stop_all()
        return self._exit_code

    @property
    def pids(self) -> list[int]:
        """The process ids of the running copies, in copy order."""
        return [copy.process.pid for copy in self._copies if copy.process is not None and copy.process.poll() is None]

    def _start(self, copy: _Copy) -> None:
        copy.process = subprocess.Popen(list(copy.command.argv), env=dict(copy.command.env),
                                        pass_fds=tuple(copy.command.pass_fds))
        copy.started, copy.restart_at = self._clock(), None
        copy.pids.append(copy.process.pid)
        log.info(f"process {copy.number} of {len(self._copies)} started (pid {copy.process.pid})")

    def _watch(self) -> None:
        now = self._clock()
        for copy in self._copies:
            if copy.process is None:
                if copy.restart_at is not None and now >= copy.restart_at:
                    self._start(copy)
                continue
            code = copy.process.poll()
            if code is None:
                continue
            pid, copy.process = copy.process.pid, None
            if code == EXIT_USAGE:
                log.error(f"process {copy.number} (pid {pid}) exited with a usage or configuration error: "
                          f"stopping all {len(self._copies)}")
                self._exit_code = EXIT_USAGE
                self.request_stop()
                return
            copy.crashes = 1 if now - copy.started >= STEADY_SECONDS else copy.crashes + 1
            delay = RESTART_DELAYS[min(copy.crashes, len(RESTART_DELAYS)) - 1]
            copy.restart_at = now + delay
            log.error(f"process {copy.number} (pid {pid}) ended on its own ({_exit_text(code)}); "
                      f"restarting it in {delay:g} s")

    def _stop_all(self) -> None:
        running = [copy.process for copy in self._copies if copy.process is not None]
        for process in running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = self._clock() + self._kill_after
        while any(process.poll() is None for process in running) and self._clock() < deadline:
            self._sleep(POLL_SECONDS)
        for process in running:
            if process.poll() is None:
                log.error(f"pid {process.pid} still running {self._kill_after:g} s after "
                          "SIGTERM: killing it")
                process.kill()
                process.wait()
                self._exit_code = self._exit_code or EXIT_FAILURE
            elif process.returncode not in (EXIT_OK, -signal.SIGTERM):
                self._exit_code = self._exit_code or EXIT_FAILURE


def _exit_text(code: int) -> str:
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"exit code {code}"
