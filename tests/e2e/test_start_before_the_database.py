"""`firmsift api` and `firmsift worker` started while PostgreSQL is away: they wait with backoff,
one clear line per attempt and no traceback, and become ready when it is back (through the TCP
proxy of tests/support/tcp_proxy.py, not listening until the test starts it)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.support.postgres import postgres_engine
from tests.support.processes import (
    UVICORN_PORT,
    Processes,
    announced_port,
    refusing_port,
    run_cli,
    start_worker_process,
    wait_until,
    worker_probe,
)
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import HANG_SECONDS

pytestmark = pytest.mark.e2e


def waiting_lines(log: str) -> list[dict]:
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [line for line in lines if line["message"].startswith("database unreachable at start-up")]


def test_api_and_worker_wait_for_the_database_and_become_ready_when_it_is_back(tmp_path: Path) -> None:
    with postgres_engine(migrate=False) as engine:
        url = engine.url
        proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
        proxy.start()
        proxy.stop()  # the proxy holds its port number; connections to it are refused until start()
        processes = Processes(tmp_path, env={
            "FIRMSIFT_DATABASE_URL": url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False),
            "FIRMSIFT_AUTH": "off",
            "FIRMSIFT_WAIT_TIME": "1",
            "FIRMSIFT_LLM_API_KEY": "unused-no-job-is-answered-here",
        })
        try:
            api = processes.firmsift("api", "api", "--port", "0")
            worker = start_worker_process(processes)
            wait_until(lambda: len(waiting_lines(api.log())) >= 3 and len(waiting_lines(worker.log())) >= 3, 30,
                       "the processes did not report waiting for the database")
            assert api.running and worker.running
            proxy.start()  # the database is back
            api_port = announced_port(api, UVICORN_PORT)

            def ready() -> bool:
                try:
                    return httpx.get(f"http://127.0.0.1:{api_port}/readyz", timeout=5).status_code == 200
                except httpx.TransportError:
                    return False

            wait_until(ready, 60, "the API never became ready")
            accepted = httpx.post(f"http://127.0.0.1:{api_port}/domains/classify", json={"domains": ["a.com"]})
            probe = worker_probe(worker)
            wait_until(lambda: _probe_ok(probe), 60, "the worker never served its probe")
        finally:
            processes.stop_all()
            proxy.close()
    assert accepted.status_code == 202
    for process in (api, worker):
        log = process.log()
        lines = waiting_lines(log)
        assert [line["attempt"] for line in lines] == list(range(1, len(lines) + 1))
        assert all("Connection refused" in line["message"] or "connect" in line["message"] for line in lines)
        assert "Traceback" not in log, log[-2000:]
        delays = [float(line["message"].rsplit("retrying in ", 1)[1].rstrip("s")) for line in lines]
        assert max(delays) > min(delays)  # backing off, not hammering


def _probe_ok(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def test_a_worker_gives_up_after_the_wait_allowed_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    with refusing_port() as port:
        # The default wait is 5 minutes: a worker that ignored the 2 s allowed would outlast the timeout.
        result = run_cli({"FIRMSIFT_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{port}/nothing",
                          "FIRMSIFT_DATABASE_WAIT_SECONDS": "2",
                          "FIRMSIFT_LLM_API_KEY": "unused-no-job-is-answered-here"}, "worker", timeout=HANG_SECONDS)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("firmsift: the database is unreachable after")
    assert "Traceback" not in result.stderr
    # The pauses it announced fit in the wait allowed (each said to a tenth of a second), and it
    # gave up at the attempt after the last of them.
    lines = waiting_lines(result.stderr)
    pauses = [float(line["message"].rsplit("retrying in ", 1)[1].rstrip("s")) for line in lines]
    assert lines and sum(pauses) <= 2 + 0.05 * len(pauses), pauses
    assert f"after {len(lines) + 1} attempts" in last
