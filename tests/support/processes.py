"""Starting real processes for end-to-end tests: fake providers, `firmsift api` and `firmsift worker`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


@dataclass
class Processes:
    """Every process a test started, stopped at the end whatever happened."""

    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    started: list[Process] = field(default_factory=list)

    def start(self, name: str, *argv: str, extra_env: dict[str, str] | None = None) -> Process:
        log_path = self.folder / f"{name}-{len(self.started)}.log"
        env = {**os.environ, **self.env, **(extra_env or {})}
        with log_path.open("wb") as log:
            popen = subprocess.Popen(list(argv), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        process = Process(name, popen, log_path)
        self.started.append(process)
        return process

    def start_fake(self, module: str, *args: str) -> tuple[Process, int]:
        """Start a fake provider server on a free port and return it with its port."""
        port = free_port()
        process = self.start(module.rsplit(".", 1)[-1], sys.executable, "-m", module, "--port", str(port), *args)
        wait_for_port(port, process)
        return process, port

    def firmsift(self, name: str, *args: str, extra_env: dict[str, str] | None = None) -> Process:
        return self.start(name, sys.executable, "-m", "firmsift.entrypoints.cli", *args, extra_env=extra_env)

    def stop_all(self) -> None:
        for process in reversed(self.started):
            process.stop()

    def kill_all(self) -> None:
        """kill -9 every process still running: a fast teardown for tests that already checked
        what a clean stop would show."""
        for process in self.started:
            if process.running:
                process.kill()


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
            return httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(healthy, timeout, f"{process.name} never became healthy")


def start_api(processes: Processes, name: str = "api") -> tuple[Process, str]:
    """`firmsift api` on a free loopback port, once it answers /healthz: (process, base URL)."""
    port = free_port()
    api = processes.firmsift(name, "api", "--port", str(port))
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, api)
    return api, base


def run_cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run one `firmsift` command to completion with these settings on top of the environment."""
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=timeout)
