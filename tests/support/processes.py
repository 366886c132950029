"""Starting real processes for end-to-end tests: fake providers, `firmsift api` and `firmsift worker`.

No port is picked here and released for a process to take later (another process may take it
in between): every server binds port 0 itself and the test reads the port it announces."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from firmsift.entrypoints.outbound_proxy import PROXY_VARIABLES

REPO = Path(__file__).resolve().parents[2]

# What each kind of process writes once it listens on the port the kernel gave it.
FAKE_SERVER_PORT = re.compile(r"^(\d+)$", re.MULTILINE)  # the fakes' first line on stdout
UVICORN_PORT = re.compile(r"Uvicorn running on https?://\S+?:(\d+) ")  # `firmsift serve|api --port 0`


@contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port where connections are refused for as long as the block runs: a socket
    bound to it that never listens holds it, so no other process can start listening there."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield int(holder.getsockname()[1])


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """kill -9: no clean-up, no goodbye, exactly like a crashed machine."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self, timeout: float = 20) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode


# The sandbox's DNS answers NXDOMAIN for every name, and the tests' domains are made up: every
# process a test starts has the pre-check off unless the test turns it on (with a DNS server of
# its own: tests/integration/test_precheck_end_to_end.py).
NO_PRECHECK = {"FIRMSIFT_PRECHECK": "false"}
# The fake LLM server stands for a provider's API, though it listens on loopback: its calls go
# at the provider default's concurrency, not one at a time as toward a local server that does not
# say how many it serves, and an unreadable answer is a failed row, not asked again (the local
# defaults are tested in tests/integration/test_llm_served_slots.py and tests/unit/test_process_job.py).
AS_A_PROVIDER = {"FIRMSIFT_LLM_CONCURRENCY": "8", "FIRMSIFT_LLM_UNREADABLE_RETRIES": "0"}
# A machine's outbound proxy says nothing to processes that talk only to loopback, and changes what
# the pre-check may conclude: the processes a test starts never see one unless the test sets it.


def machine_environment() -> dict[str, str]:
    """This process's environment without the machine's proxy settings."""
    return {name: value for name, value in os.environ.items() if name not in PROXY_VARIABLES}


@dataclass
class Processes:
    """Every process a test started, stopped at the end whatever happened."""

    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    started: list[Process] = field(default_factory=list)

    def start(self, name: str, *argv: str, extra_env: dict[str, str] | None = None) -> Process:
        log_path = self.folder / f"{name}-{len(self.started)}.log"
        env = {**machine_environment(), **NO_PRECHECK, **AS_A_PROVIDER, **self.env, **(extra_env or {})}
        with log_path.open("wb") as log:
            popen = subprocess.Popen(list(argv), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        process = Process(name, popen, log_path)
        self.started.append(process)
        return process

    def start_fake(self, module: str, *args: str) -> tuple[Process, int]:
        """Start a fake provider server on a port of its own choosing; return it with that port."""
        process = self.start(module.rsplit(".", 1)[-1], sys.executable, "-m", module, "--port", "0", *args)
        port = announced_port(process, FAKE_SERVER_PORT)
        wait_for_port(port, process)
        return process, port

    def firmsift(self, name: str, *args: str, extra_env: dict[str, str] | None = None) -> Process:
        return self.start(name, sys.executable, "-m", "firmsift.entrypoints.cli.main", *args, extra_env=extra_env)

    def stop_all(self) -> None:
        for process in reversed(self.started):
            process.stop()

    def kill_all(self) -> None:
        """kill -9 every process still running: a fast teardown for tests that already checked
        what a clean stop would show."""
        for process in self.started:
            if process.running:
                process.kill()


def announced_port(process: Process, pattern: re.Pattern[str], timeout: float = 60) -> int:
    """The port a process says (in its log) it listens on: group 1 of the first match of `pattern`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = pattern.search(process.log())
        if found:
            return int(found.group(1))
        if process.popen.poll() is not None:
            raise RuntimeError(f"{process.name} exited before listening:\n{process.log()}")
        time.sleep(0.05)
    raise TimeoutError(f"{process.name} announced no port within {timeout:g}s:\n{process.log()}")


def probe_port(process: Process, timeout: float = 60) -> int:
    """The port of a worker's probe, from its JSON log line `worker probe listening`."""

    def logged() -> int | None:
        for line in process.log().splitlines():
            if '"worker probe listening"' in line:
                return int(json.loads(line)["port"])
        if process.popen.poll() is not None:
            raise RuntimeError(f"{process.name} exited before its probe listened:\n{process.log()}")
        return None

    return int(wait_until(logged, timeout, f"{process.name} never opened its probe:\n{process.log()}"))


def wait_for_port(port: int, process: Process, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise RuntimeError(f"{process.name} exited early:\n{process.log()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"{process.name} did not listen on {port}:\n{process.log()}")


def wait_until(predicate, timeout: float, message: str, interval: float = 0.1):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(message)


def wait_healthy(base_url: str, process: Process, timeout: float = 60) -> None:
    def healthy() -> bool:
        if process.popen.poll() is not None:
            raise RuntimeError(f"{process.name} exited early:\n{process.log()}")
        try:
            # verify=False: plain HTTP on loopback; the CA bundle a TLS check would load costs ~40 ms a poll.
            return httpx.get(f"{base_url}/healthz", timeout=1, verify=False).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(healthy, timeout, f"{process.name} never became healthy")


def start_api(processes: Processes, name: str = "api", command: str = "api",
              extra_env: dict[str, str] | None = None) -> tuple[Process, str]:
    """`firmsift api` (or `serve`) on a loopback port it binds itself (`--port 0`), once it answers
    /healthz: (process, base URL)."""
    api = processes.firmsift(name, command, "--port", "0", extra_env=extra_env)
    base = f"http://127.0.0.1:{announced_port(api, UVICORN_PORT)}"
    wait_healthy(base, api)
    return api, base


def start_worker(processes: Processes, name: str = "worker",
                 extra_env: dict[str, str] | None = None) -> tuple[Process, str]:
    """`firmsift worker` with its probe on a port it binds itself: (process, probe base URL), once
    the probe listens. Start several workers first and call `worker_probe` for each to overlap
    their start-up; this one waits."""
    worker = start_worker_process(processes, name, extra_env)
    return worker, worker_probe(worker)


def start_worker_process(processes: Processes, name: str = "worker",
                         extra_env: dict[str, str] | None = None) -> Process:
    """`firmsift worker` with FIRMSIFT_WORKER_PROBE_PORT=0, not waited for."""
    return processes.firmsift(name, "worker", extra_env={**(extra_env or {}), "FIRMSIFT_WORKER_PROBE_PORT": "0"})


def worker_probe(worker: Process) -> str:
    """The base URL of a started worker's probe, once it listens."""
    return f"http://127.0.0.1:{probe_port(worker)}"


def run_cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run one `firmsift` command to completion with these settings on top of the environment."""
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", *args], capture_output=True,
                          text=True, env={**machine_environment(), **NO_PRECHECK, **AS_A_PROVIDER, **env}, timeout=timeout)


def run_group(argv: list[str], timeout: float, **options: object) -> subprocess.CompletedProcess[str]:
    """Run a command that starts processes of its own (a benchmark's servers and workers) to
    completion; then, or on timeout, kill whatever is left of its process group, so no child
    outlives the test."""
    popen = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, **options)  # type: ignore[call-overload]
    try:
        stdout, stderr = popen.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(popen.pid, signal.SIGKILL)
        stdout, stderr = popen.communicate()
        raise AssertionError(f"{argv} ran over {timeout} s; its group was killed. stderr:\n{stderr[-4000:]}") from None
    with suppress(ProcessLookupError):
        os.killpg(popen.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(argv, popen.returncode, stdout, stderr)
