"""`./dev local`, trying firmsift without a key in one command: the provisioned llama-cpp-python server
with the packaged SmolLM2 model, then `firmsift serve` wired to it; a job is answered by the model,
and SIGTERM to the script, or Ctrl-C, stops both processes, firmsift first."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.realserver.llama_server import require_provisioned
from tests.support.processes import REPO, machine_environment, wait_until

pytestmark = pytest.mark.e2e
SERVE_LISTENING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
MODEL_LISTENING = re.compile(r"the model server listens on 127\.0\.0\.1:(\d+)")


def _serve_port(script: subprocess.Popen[bytes], log: Path) -> int | None:
    """The port firmsift serve announced in the script's output; its output and the model server's
    log in the failure when the script has ended before it."""
    text = log.read_text()
    if (announced := SERVE_LISTENING.search(text)) is not None:
        return int(announced.group(1))
    if script.poll() is not None:
        raise AssertionError(f"./dev local exited {script.returncode} before firmsift listened:\n{_logs(text)}")
    return None


def _logs(script_output: str) -> str:
    """The end of the script's output and of the model server's log it names, for a failure."""
    named = re.search(r"\(log: (\S+)\)", script_output)
    server = Path(named.group(1)).read_text()[-2000:] if named and Path(named.group(1)).exists() else "(none yet)"
    return f"{script_output[-3000:]}\n--- the model server's log ---\n{server}"


@pytest.mark.long(300)
@pytest.mark.parametrize(("stop", "status"), [("sigterm", 128 + signal.SIGTERM), ("ctrl-c", 130)])
def test_dev_local_serves_a_job_answered_by_the_packaged_model_and_stops_both(tmp_path: Path, stop: str,
                                                                             status: int) -> None:
    require_provisioned()
    log = tmp_path / "dev-local.log"
    env = {**machine_environment(), "FIRMSIFT_VENV": str(Path(sys.prefix)), "PYTHON": sys.executable,
           "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'local.db'}", "FIRMSIFT_PRECHECK": "false",
           "FIRMSIFT_SEARCH_PROVIDER": "homepage",
           # What is tested is the wiring, not the speed: on a loaded machine (the suite beside two
           # busy loops) a 135M model on a shared core took over the default 60 s to answer.
           "FIRMSIFT_LLM_TIMEOUT": "300", "FIRMSIFT_LLM_DEADLINE": "600"}
    for variable in ("FIRMSIFT_LLM_MODEL", "FIRMSIFT_LLM_API_BASE", "FIRMSIFT_LLM_API_KEY", "OPENAI_API_KEY"):
        env.pop(variable, None)
    with log.open("wb") as out:
        # SIGINT as a terminal leaves it: a pytest-xdist worker ignores it, and bash cannot trap a
        # signal that was ignored when it started.
        script = subprocess.Popen([str(REPO / "dev"), "local", "--port", "0"], cwd=REPO, env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True,
                                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        try:
            port = wait_until(lambda: _serve_port(script, log), 240, "", interval=0.5)
        except TimeoutError:
            raise AssertionError(f"firmsift serve never listened:\n{_logs(log.read_text())}") from None
        model_port = int(MODEL_LISTENING.search(log.read_text()).group(1))  # type: ignore[union-attr]
        base = f"http://127.0.0.1:{port}"
        accepted = httpx.post(f"{base}/domains/classify", json={"domains": ["kelloggs.com"]}, timeout=30).json()
        assert "warning" not in accepted  # a worker runs: no key was needed
        job = wait_until(lambda: (d := httpx.get(f"{base}/domains/classify/{accepted['job_id']}", timeout=30).json())
                         ["status"] in ("DONE", "FAILED") and d, 660, "the job never finished", interval=1)
        [result] = job["results"]
        # The model answered: a 135M model's answer is read, or, now and then, cannot be (its output is
        # kept in the error); never a call that did not reach it or timed out. How well it answers is
        # `firmsift eval`'s to say.
        assert result["source"] == "llm", job
        assert result["status"] == "DONE" or "could not be read" in (result["error"] or ""), job
        server_log = re.search(r"\(log: (\S+)\)", log.read_text()).group(1)  # type: ignore[union-attr]
        served = Path(server_log).read_text()
        assert '"POST /v1/chat/completions HTTP/1.1" 200' in served

        if stop == "sigterm":  # to the script only (a service manager): it passes the stop on
            script.send_signal(signal.SIGTERM)
        else:  # Ctrl-C: the terminal signals the whole foreground group (the model server has its own)
            os.killpg(script.pid, signal.SIGINT)
        # SIGTERM: firmsift's own status (uvicorn stops gracefully, then ends by that signal);
        # Ctrl-C: 130, as a shell reports an interrupted command.
        assert script.wait(timeout=60) == status, log.read_text()[-3000:]
        assert "Finished server process" in log.read_text()  # stopped gracefully, not killed
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{base}/healthz", timeout=5)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the model server is stopped too
            try:
                httpx.get(f"http://127.0.0.1:{model_port}/v1/models", timeout=2)
            except httpx.TransportError:
                break
            time.sleep(0.5)
        else:
            raise AssertionError("the model server still answers after ./dev local stopped")
    finally:
        if script.poll() is None:
            # SIGTERM first: the script's exit trap stops the model server, which runs in a session
            # of its own (a SIGKILL to the script's group left it running after a failed test).
            script.send_signal(signal.SIGTERM)
            try:
                script.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(script.pid, signal.SIGKILL)
                script.wait()
