"""`firmsift api --workers 2` and `firmsift worker --processes 2` as real processes on one SQLite file:
jobs flow through both, a copy killed with -9 is replaced, SIGTERM to a parent stops all its copies;
a web session started through one API copy is known to the other."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from firmsift.entrypoints.web.site import COOKIE
from tests.e2e.test_end_to_end import llm_calls, submit, wait_done
from tests.support.processes import Process, Processes, announced_port, wait_healthy, wait_until
from tests.support.web_sessions import page_token

pytestmark = pytest.mark.e2e
SERVING = re.compile(r"serving http://127\.0\.0\.1:(\d+) from 2 processes")


def children(process: Process) -> list[int]:
    """The pids of a process's children, from /proc (they are the group's copies)."""
    pid = process.popen.pid
    found = Path(f"/proc/{pid}/task/{pid}/children")
    return sorted(int(child) for child in found.read_text().split()) if found.exists() else []


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[dict]:
    processes = Processes(tmp_path)
    llm_log = tmp_path / "llm-calls.jsonl"
    try:
        _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--delay", "0.2", "--log", str(llm_log))
        _search, search_port = processes.start_fake("tests.support.fake_search_server")
        processes.env = {
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'firmsift.db'}",
            "FIRMSIFT_LLM_MODEL": "openai/fake-model",
            "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
            "FIRMSIFT_LLM_API_KEY": "sk-e2e",
            "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
            "FIRMSIFT_WAIT_TIME": "1",
            "FIRMSIFT_POLL_INTERVAL": "0.1",
            "FIRMSIFT_VISIBILITY_TIMEOUT": "4",
        }
        api = processes.firmsift("api", "api", "--workers", "2", "--port", "0")
        base = f"http://127.0.0.1:{announced_port(api, SERVING, timeout=120)}"
        wait_healthy(base, api, timeout=120)
        worker = processes.firmsift("worker", "worker", "--processes", "2")
        yield {"processes": processes, "base": base, "api": api, "worker": worker, "llm_log": llm_log}
    finally:
        processes.stop_all()


def test_jobs_flow_through_copies_and_a_killed_copy_is_replaced(stack: dict) -> None:
    base, api, worker = stack["base"], stack["api"], stack["worker"]
    wait_until(lambda: len(children(api)) == 2 and len(children(worker)) == 2, 120, "copies did not start")
    jobs = [submit(base, [f"brand{j}-{i}.com" for i in range(5)]) for j in range(4)]
    assert all(wait_done(base, job, timeout=120)["status"] == "DONE" for job in jobs)

    killed_worker, killed_api = children(worker)[0], children(api)[0]
    os.kill(killed_worker, signal.SIGKILL)
    os.kill(killed_api, signal.SIGKILL)
    wait_until(lambda: len(children(worker)) == 2 and killed_worker not in children(worker)
               and len(children(api)) == 2 and killed_api not in children(api), 60, "killed copies not replaced")
    assert all(httpx.get(f"{base}/healthz").status_code == 200 for _ in range(20))
    late = submit(base, [f"late-{i}.com" for i in range(5)])
    assert wait_done(base, late, timeout=120)["status"] == "DONE"
    calls = llm_calls(stack["llm_log"])
    assert set(calls) == {f"brand{j}-{i}.com" for j in range(4) for i in range(5)} | {f"late-{i}.com" for i in range(5)}
    assert set(calls.values()) == {1}  # the copy was killed idle: nothing asked twice
    assert "ended on its own (signal SIGKILL); restarting it in 1 s" in worker.log()

    copies = children(worker) + children(api)
    assert worker.stop(timeout=60) == 0
    assert api.stop(timeout=60) == 0
    assert all(gone(pid) for pid in copies)


def test_a_web_session_holds_whichever_copy_answers(stack: dict) -> None:
    base, api = stack["base"], stack["api"]
    wait_until(lambda: len(children(api)) == 2, 120, "copies did not start")
    first = httpx.get(f"{base}/new")
    cookies, token = {COOKIE: first.cookies[COOKIE]}, page_token(first.text)
    # A new connection for each request, so the two copies' accept() calls share them out.
    answers = [httpx.post(f"{base}/new/check?kind=csv&column=Website", content=b"Website\r\nacme.com\r\n",
                          headers={"content-type": "text/csv", "x-csrf-token": token}, cookies=cookies)
               for _ in range(20)]
    assert [a.status_code for a in answers] == [200] * 20, [a.text[:200] for a in answers if a.status_code != 200]
