"""Idempotency-Key and job owners on every store (memory, SQLite, PostgreSQL), through the real intake
and through the HTTP API, including identical submissions racing each other."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import anyio
import pytest
from sqlalchemy import Engine, text
from starlette.testclient import TestClient

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.sql.job_intake import SqlJobIntake
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.idempotency import IdempotencyKeyTaken
from firmsift.domain.keys import Caller
from firmsift.domain.model import Job, JobStatus
from firmsift.services.submit import SubmitJob, submit_job

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


def job(job_id: str, owner: str = "key_a", key: str | None = "k1", *domains: str) -> Job:
    return Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
               domains=domains or ("a.com",), owner=owner, idempotency_key=key)


@pytest.mark.anyio
async def test_store_keeps_owner_and_key_and_refuses_a_second_job_with_them(store) -> None:
    await store.create_job(job("j1", "key_a", "k1", "a.com", "b.com"))
    stored = await store.get_job("j1")
    assert (stored.owner, stored.idempotency_key) == ("key_a", "k1")
    with pytest.raises(IdempotencyKeyTaken) as taken:
        await store.create_job(job("j2", "key_a", "k1", "c.com"))
    assert taken.value.existing.id == "j1" and taken.value.existing.domains == ("a.com", "b.com")
    assert await store.get_job("j2") is None
    await store.create_job(job("j3", "key_b", "k1"))  # another owner
    await store.create_job(job("j4", "key_a", None))  # no key: never a conflict
    await store.create_job(job("j5", "key_a", None))
    await store.release_idempotency_key("j1")
    await store.create_job(job("j6", "key_a", "k1"))
    assert (await store.get_job("j1")).idempotency_key is None


@pytest.mark.anyio
async def test_concurrent_identical_submissions_make_one_job_and_one_message(engine: Engine) -> None:
    store = SqlStore(engine)
    queue = SqlQueue(engine, "jobs", visibility_timeout=30, max_receives=5)
    intake = SqlJobIntake(engine, store, queue)
    catalog = load_catalog()
    command = SubmitJob("cpg", ["a.com", "b.com"], caller=Caller("key_a", frozenset()), idempotency_key="same")

    submissions = await asyncio.gather(*(
        submit_job(command, catalog=catalog, intake=intake, max_domains=10) for _ in range(8)))

    assert len({s.job.id for s in submissions}) == 1
    assert sum(not s.replayed for s in submissions) == 1
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM jobs")).scalar() == 1
        assert conn.execute(text("SELECT count(*) FROM queue_messages")).scalar() == 1


def post(client: TestClient, body: object, **headers: str):
    return client.post("/domains/classify", content=json.dumps(body),
                       headers={"content-type": "application/json", **headers})


def test_http_repeat_returns_the_same_job_and_a_different_body_is_refused(container) -> None:
    with TestClient(container.api()) as client:
        first = post(client, {"domains": ["a.com", "b.com"]}, **{"idempotency-key": "order 42"})
        again = post(client, {"domains": ["A.com", "https://b.com/x"]}, **{"idempotency-key": "order 42"})
        other = post(client, {"domains": ["a.com"]}, **{"idempotency-key": "order 42"})
        fresh = post(client, {"domains": ["a.com", "b.com"]})
        metrics = client.get("/metrics").text
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json() and again.headers["location"] == first.headers["location"]
    assert again.headers["idempotent-replayed"] == "true" and "idempotent-replayed" not in first.headers
    assert other.status_code == 422
    error = other.json()["error"]
    assert error["code"] == "idempotency_key_reused" and first.json()["job_id"] in error["message"]
    assert fresh.json()["job_id"] != first.json()["job_id"]
    assert "firmsift_jobs_accepted_total 2.0" in metrics  # a replay accepts nothing new
    messages = anyio.run(lambda: container.work_queue().receive(max_messages=10))
    assert len(messages) == 2


@pytest.mark.parametrize("key", [b"x" * 201, "caf\u00e9".encode(), b"a\x01b"])
def test_http_refuses_malformed_idempotency_keys(container, key: bytes) -> None:
    with TestClient(container.api()) as client:
        response = client.post("/domains/classify", content=b'{"domains": ["a.com"]}',
                               headers={"content-type": "application/json", "idempotency-key": key})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"


def test_http_concurrent_identical_submissions_make_one_job(container) -> None:
    with TestClient(container.api()) as client, ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(
            lambda _: post(client, {"domains": ["a.com", "b.com"]}, **{"idempotency-key": "race"}), range(16)))
    assert {r.status_code for r in responses} == {202}
    assert len({r.json()["job_id"] for r in responses}) == 1
    assert sum("idempotent-replayed" not in r.headers for r in responses) == 1
    with container.engine().connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM jobs")).scalar() == 1


def test_a_replay_shows_the_jobs_current_status(container) -> None:
    with TestClient(container.api()) as client:
        first = post(client, {"domains": ["a.com"]}, **{"idempotency-key": "k"}).json()
        anyio.run(container.store().set_job_status, first["job_id"], JobStatus.DONE)
        again = post(client, {"domains": ["a.com"]}, **{"idempotency-key": "k"}).json()
    assert again == {**first, "status": "DONE"}
