"""`firmsift api` and `firmsift worker` started while PostgreSQL is away: they wait with backoff,
one clear line per attempt and no traceback, and become ready when it is back (through the TCP
proxy of tests/support/tcp_proxy.py, not listening until the test starts it)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from tests.support.postgres import postgres_engine
from tests.support.processes import Processes, free_port, run_cli, wait_until
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.e2e


def waiting_lines(log: str) -> list[dict]:
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [line for line in lines if line["message"].startswith("database unreachable at start-up")]


def test_api_and_worker_wait_for_the_database_and_become_ready_when_it_is_back(tmp_path: Path) -> None:
    with postgres_engine(migrate=False) as engine:
        url = engine.url
        proxy = TcpProxy(url.host or "127.0.0.1", url.port or 5432, port=free_port())
        processes = Processes(tmp_path, env={
            "FIRMSIFT_DATABASE_URL": url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False),
            "FIRMSIFT_AUTH": "off",
            "FIRMSIFT_WAIT_TIME": "1",
        })
        api_port, probe_port = free_port(), free_port()
        try:
            api = processes.firmsift("api", "api", "--port", str(api_port))
            worker = processes.firmsift("worker", "worker", extra_env={"FIRMSIFT_WORKER_PROBE_PORT": str(probe_port)})
            wait_until(lambda: len(waiting_lines(api.log())) >= 3 and len(waiting_lines(worker.log())) >= 3, 30,
                       "the processes did not report waiting for the database")
            assert api.running and worker.running
            proxy.start()  # the database is back

            def ready() -> bool:
                try:
                    return httpx.get(f"http://127.0.0.1:{api_port}/readyz", timeout=5).status_code == 200
                except httpx.TransportError:
                    return False

            wait_until(ready, 60, "the API never became ready")
            accepted = httpx.post(f"http://127.0.0.1:{api_port}/domains/classify", json={"domains": ["a.com"]})
            wait_until(lambda: _probe_ok(probe_port), 60, "the worker never served its probe")
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


def _probe_ok(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def test_a_worker_gives_up_after_the_wait_allowed_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_cli({"FIRMSIFT_DATABASE_URL": f"postgresql://postgres@127.0.0.1:{free_port()}/nothing",
                      "FIRMSIFT_DATABASE_WAIT_SECONDS": "2"}, "worker", timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("firmsift: the database is unreachable after")
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 30
