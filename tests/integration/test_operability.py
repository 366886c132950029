"""Operability on the real app: readiness, metrics, and the worker's probe."""

import asyncio
import sqlite3
from pathlib import Path

import httpx
import pytest
from dependency_injector import providers
from sqlalchemy import event
from starlette.testclient import TestClient

from firmsift.adapters.readiness import CHECK_TIMEOUT_SECONDS, INTAKE_FAILURE_SECONDS, IntakeOutcomes
from firmsift.adapters.sql.engine import make_engine
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.worker.probe import worker_probe


pytestmark = pytest.mark.container(database="ops.db")


def test_readyz_reports_database_and_queue(container) -> None:
    with TestClient(container.api()) as client:
        response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "database_writes": "ok", "queue": "ok",
                                                            "intake": "ok"}}


def test_readyz_is_503_when_the_database_is_gone(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    url = f"sqlite:///{folder / 'db.sqlite'}"
    container = Container(settings=Settings(database_url=url))
    # Both checks wait for the file's one connection. The one whose connect fails frees it without
    # waking the other, which waits out the pool timeout (60 s by default) before the client can
    # close; a pool timeout just over the checks' own leaves /readyz's answer as it was.
    container.engine.override(providers.Singleton(make_engine, url, sqlite_pool_timeout=CHECK_TIMEOUT_SECONDS + 1))
    container.migrate()
    with TestClient(container.api()) as client:
        container.engine().dispose()
        (folder / "db.sqlite").unlink()
        folder.rmdir()  # SQLite cannot even create a new file now
        response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready" and body["checks"]["database"] != "ok"


def test_readyz_is_503_while_the_database_answers_reads_but_refuses_writes(container) -> None:
    """The attack's case: every submit got 503 while /readyz said 200. The service's connections
    are reopened read-only (`mode=ro`), as after a full disk, a read-only mount or file: SQLite
    still begins transactions and answers reads, and refuses every write."""
    engine = container.engine()
    read_only = {"on": False}

    @event.listens_for(engine, "do_connect")
    def _maybe_read_only(_dialect, _record, cargs, cparams):  # type: ignore[no-untyped-def]
        if read_only["on"]:
            return sqlite3.connect(f"file:{cargs[0]}?mode=ro", uri=True, **cparams)
        return None

    def reconnect(on: bool) -> None:
        read_only["on"] = on
        engine.dispose()

    with TestClient(container.api(), raise_server_exceptions=False) as client:
        assert client.get("/readyz").status_code == 200
        reconnect(True)
        refused = client.post("/domains/classify", json={"domains": ["a.com"]})
        not_ready = client.get("/readyz")
        reconnect(False)
        still_not_ready = client.get("/readyz")  # writes work again, but the last intake failed
        accepted = client.post("/domains/classify", json={"domains": ["a.com"]})
        ready = client.get("/readyz")
    assert refused.status_code == 503
    assert not_ready.status_code == 503
    # Once SQLite refused a write, each new connection is tried with a write first: none opened
    # read-only is kept, the read's included.
    refusal = "read-only: SQLite refused to write ops.db"
    assert not_ready.json()["checks"] == {"database": refusal, "database_writes": refusal, "queue": refusal,
                                          "intake": "failing"}
    assert refused.json()["error"]["code"] == "database_read_only"
    assert still_not_ready.status_code == 503 and still_not_ready.json()["checks"]["intake"] == "failing"
    assert accepted.status_code == 202
    assert ready.status_code == 200


def test_a_failed_intake_stops_counting_after_a_while() -> None:
    now = [0.0]
    outcomes = IntakeOutcomes(clock=lambda: now[0])
    assert not outcomes.failing()
    outcomes.failed()
    assert outcomes.failing()
    now[0] += INTAKE_FAILURE_SECONDS
    assert not outcomes.failing()  # traffic is let through again to find out
    outcomes.failed()
    outcomes.succeeded()
    assert not outcomes.failing()


def test_metrics_count_accepted_jobs(container) -> None:
    with TestClient(container.api()) as client:
        client.post("/domains/classify", json={"domains": ["a.com"]})
        text = client.get("/metrics").text
    assert "firmsift_jobs_accepted_total 1.0" in text


@pytest.mark.anyio
async def test_worker_probe_reports_liveness_and_metrics(container) -> None:
    since_poll = {"seconds": 0.0}
    async with worker_probe("127.0.0.1", 0, seconds_since_poll=lambda: since_poll["seconds"], stale_after=5,
                            metrics=container.metrics().exposition) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            healthy = await client.get("/healthz")
            assert healthy.status_code == 200 and healthy.json()["status"] == "ok"
            assert "firmsift_jobs_accepted_total" in (await client.get("/metrics")).text
            assert (await client.get("/nope")).status_code == 404
            assert (await client.post("/healthz")).status_code == 405
            since_poll["seconds"] = 60.04
            stuck = await client.get("/healthz")
            assert stuck.status_code == 503 and stuck.json() == {"status": "stuck", "seconds_since_poll": 60.0}
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"garbage\r\n\r\n")
        await writer.drain()
        assert b"400" in (await reader.read())
        writer.close()


@pytest.mark.anyio
@pytest.mark.parametrize(("dns", "status", "ready"), [("ok", 200, "ready"),
                                                      ("degraded: the resolver denies names", 200, "ready"),
                                                      ("failing", 503, "not ready")])
async def test_worker_probe_reports_its_checks_and_a_degraded_one_is_still_ready(
        container, dns: str, status: int, ready: str) -> None:
    async with worker_probe("127.0.0.1", 0, seconds_since_poll=lambda: 0.0, stale_after=5,
                            metrics=container.metrics().exposition, checks={"dns": lambda: dns}) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            answer = await client.get("/readyz")
    assert answer.status_code == status
    assert answer.json() == {"status": ready, "checks": {"dns": dns}}


@pytest.mark.anyio
async def test_worker_probe_metrics_answer_only_the_hosts_allowed(container) -> None:
    # A page whose DNS name is rebound to the probe's loopback port names its own host: 421.
    async with worker_probe("127.0.0.1", 0, seconds_since_poll=lambda: 0.0, stale_after=5,
                            metrics=container.metrics().exposition,
                            allowed_hosts=frozenset({"localhost", "127.0.0.1", "::1"})) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            assert (await client.get("/metrics")).status_code == 200
            rebound = await client.get("/metrics", headers={"host": f"attacker.example:{port}"})
            assert rebound.status_code == 421 and "FIRMSIFT_ALLOWED_HOSTS" in rebound.text
            assert (await client.get("/healthz", headers={"host": "10.0.0.7"})).status_code == 200  # probes by address
