"""Operability on the real app: readiness, metrics, and the worker's probe."""

import asyncio
import time
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from firmsift.entrypoints.http_api import create_app
from firmsift.entrypoints.runtime import start_container
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.worker_probe import worker_probe


@pytest.fixture
def container(tmp_path: Path):
    container = start_container(Settings(database_url=f"sqlite:///{tmp_path / 'ops.db'}"))
    yield container
    container.engine().dispose()


def test_readyz_reports_database_and_queue(container) -> None:
    with TestClient(create_app(container)) as client:
        response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": {"database": "ok", "queue": "ok"}}


def test_readyz_is_503_when_the_database_is_gone(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    container = start_container(Settings(database_url=f"sqlite:///{folder / 'db.sqlite'}"))
    with TestClient(create_app(container)) as client:
        container.engine().dispose()
        (folder / "db.sqlite").unlink()
        folder.rmdir()  # SQLite cannot even create a new file now
        response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready" and body["checks"]["database"] != "ok"


def test_metrics_count_accepted_jobs(container) -> None:
    with TestClient(create_app(container)) as client:
        client.post("/domains/classify", json={"domains": ["a.com"]})
        text = client.get("/metrics").text
    assert "firmsift_jobs_accepted_total 1.0" in text


@pytest.mark.anyio
async def test_worker_probe_reports_liveness_and_metrics(container) -> None:
    last_poll = {"at": time.monotonic()}
    async with worker_probe("127.0.0.1", 0, last_poll=lambda: last_poll["at"], stale_after=5,
                            metrics=container.metrics().exposition) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            healthy = await client.get("/healthz")
            assert healthy.status_code == 200 and healthy.json()["status"] == "ok"
            assert "firmsift_jobs_accepted_total" in (await client.get("/metrics")).text
            assert (await client.get("/nope")).status_code == 404
            assert (await client.post("/healthz")).status_code == 405
            last_poll["at"] -= 60
            stuck = await client.get("/healthz")
            assert stuck.status_code == 503 and stuck.json()["status"] == "stuck"
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"garbage\r\n\r\n")
        await writer.drain()
        assert b"400" in (await reader.read())
        writer.close()
