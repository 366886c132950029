"""llama-cpp-python's OpenAI-compatible server as a test process: find it provisioned (or skip loudly), start it
on a port it binds itself, and read what it answered from its access log."""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass

import pytest

from tests.realserver.provision import Layout, layout, read_lock, pinned, SERVER_LOCK, BUILT_PACKAGE
from tests.support.processes import Process, Processes

MODEL_ALIAS = "smollm2-135m-instruct"
_LISTENING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
_ACCESS = re.compile(r'"(GET|POST) (\S+) HTTP/[\d.]+" (\d{3})')


def server_version() -> str:
    return pinned(read_lock(SERVER_LOCK), BUILT_PACKAGE).version


def require_provisioned() -> Layout:
    """The provisioned server venv and model, else skip naming the command; under CI=true, fail."""
    where = layout()
    if where.ready():
        return where
    reason = (f"llama-cpp-python {server_version()} server not provisioned in {where.venv} (model {where.model}): "
              "run `./dev realserver` (or `python3 tests/realserver/provision.py`; builds it from source once "
              "per machine, 6-17 min on 2 cores; `.ci/run` does it)")
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@dataclass
class LlamaServer:
    process: Process
    port: int
    started_in: float  # seconds from spawn to listening (model loaded)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answered(self, path: str = "/v1/chat/completions") -> Counter[int]:
        """How many requests to `path` got each status, from uvicorn's access log."""
        return Counter(int(status) for _method, seen, status in _ACCESS.findall(self.process.log()) if seen == path)


def start_llama_server(processes: Processes, where: Layout, *, timeout: float = 120) -> LlamaServer:
    """`python -m llama_cpp.server` on port 0 (the server binds it; uvicorn logs the port it got), one model
    slot, a context large enough for the classifier's prompt with evidence, and as many threads as
    cores (up to 4), or one when pytest-xdist runs other tests beside it: llama.cpp's threads wait
    for each other by spinning, so threads competing for busy cores stall them all."""
    started = time.monotonic()
    threads = 1 if os.environ.get("PYTEST_XDIST_WORKER") else min(os.cpu_count() or 2, 4)
    process = processes.start(
        "llama-cpp-server", str(where.python), "-m", "llama_cpp.server",
        "--model", str(where.model), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", "0", "--n_ctx", "4096", "--n_threads", str(threads),
        # its __main__ lets HOST and PORT from the environment override the flags: pin them too
        extra_env={"PYTHONUNBUFFERED": "1", "HOST": "127.0.0.1", "PORT": "0"},
    )
    deadline = started + timeout
    while time.monotonic() < deadline:
        listening = _LISTENING.search(process.log())
        if listening:
            return LlamaServer(process, int(listening.group(1)), time.monotonic() - started)
        if not process.running:
            raise RuntimeError(f"llama-cpp-python's server exited ({process.popen.returncode}):\n"
                               f"{process.log()[-4000:]}")
        time.sleep(0.1)
    raise TimeoutError(f"llama-cpp-python's server did not listen within {timeout:g}s:\n{process.log()[-4000:]}")
