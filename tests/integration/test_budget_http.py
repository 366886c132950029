"""Daily spend limits on the real app and a real SQLite file: 429 budget_exhausted on both intake
routes, naming the limit, the spend and the reset; other keys unaffected; the global limit."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import jsonschema
import pytest
from starlette.testclient import TestClient

from firmsift.domain.budgets import BudgetExhausted, JobPause, window_of
from firmsift.domain.keys import IssuedKey
from firmsift.domain.model import DomainResult, Job, JobStatus, ResultStatus
from firmsift.services.keys import create_key


pytestmark = pytest.mark.container(auth="required", rate_limit_per_minute=0)


def new_key(container, name: str, limit: float | None) -> IssuedKey:
    return anyio.run(lambda: create_key(name, (), container.api_keys(), daily_limit_usd=limit))


def spent(container, key: IssuedKey, cost: float) -> None:
    """A job of `key` with one domain that finished now, having cost `cost` USD."""
    store = container.store()

    async def record() -> None:
        job_id = f"job-{key.record.id}"
        await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.RUNNING, owner=key.record.id,
                                   created_at=datetime.now(timezone.utc), domains=("paid.com",)))
        await store.save_result(job_id, DomainResult("paid.com", ResultStatus.DONE, cost_usd=cost), None)

    anyio.run(record)


def bearer(key: IssuedKey) -> dict[str, str]:
    return {"authorization": f"Bearer {key.secret}", "content-type": "application/json"}


def classify(client: TestClient, key: IssuedKey):
    return client.post("/domains/classify", content=json.dumps({"domains": ["a.com"]}), headers=bearer(key))


def batch(client: TestClient, key: IssuedKey):
    return client.post("/batches", content=json.dumps({"domains": ["a.com", "b.com"]}), headers=bearer(key))


def assert_exhausted(request: Callable[[], Any], scope: str, limit: float, spend: float) -> None:
    """Make the request, and check it is refused for the budget: the Retry-After is the time left
    in the window when the server answered, between the clock read before and after the call."""
    before = datetime.now(timezone.utc)
    response = request()
    after = datetime.now(timezone.utc)
    assert response.status_code == 429
    error = response.json()["error"]
    resets_at = window_of(datetime.now(timezone.utc)).resets_at
    assert (error["code"], error["scope"], error["limit_usd"], error["spent_usd"]) == (
        "budget_exhausted", scope, limit, spend)
    assert error["resets_at"] == resets_at.isoformat() and resets_at.isoformat() in error["message"]
    assert f"{limit:g} USD" in error["message"]
    retry_after = timedelta(seconds=int(response.headers["retry-after"]))  # whole seconds, rounded up
    assert resets_at - after <= retry_after <= resets_at - before + timedelta(seconds=1)


def test_a_key_over_its_daily_limit_gets_429_on_both_intake_routes_and_others_do_not(container) -> None:
    tight, free = new_key(container, "tight", 0.05), new_key(container, "free", None)
    spent(container, tight, 0.06)
    spent(container, free, 100.0)
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        assert_exhausted(lambda: classify(client, tight), "key", 0.05, 0.06)
        assert_exhausted(lambda: batch(client, tight), "key", 0.05, 0.06)
        classify_error = classify(client, tight).json()["error"]
        assert "this API key's daily spend limit" in classify_error["message"]
        assert classify(client, free).status_code == 202
        assert batch(client, free).status_code == 202
        document = client.get("/openapi.json").json()
    described = document["components"]["schemas"]["ErrorObject"]["properties"]
    assert set(classify_error) <= set(described)
    for path in ("/domains/classify", "/batches"):
        assert "budget_exhausted" in document["paths"][path]["post"]["responses"]["429"]["description"]
    with container.engine().connect() as conn:  # nothing of the refused key's was stored
        owners = conn.exec_driver_sql("SELECT owner FROM jobs").scalars().all()
    assert owners.count(tight.record.id) == 1


def test_a_dry_run_spends_nothing_and_is_answered_over_a_spent_limit(container) -> None:
    tight = new_key(container, "tight", 0.05)
    spent(container, tight, 0.06)
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        estimate = client.post("/batches?dry_run=true", content=json.dumps({"domains": ["a.com", "b.com"]}),
                               headers=bearer(tight))
        assert_exhausted(lambda: batch(client, tight), "key", 0.05, 0.06)
    assert estimate.status_code == 200 and estimate.json()["dry_run"] is True and estimate.json()["accepted"] == 2


def test_under_the_limit_work_is_accepted(container) -> None:
    key = new_key(container, "team", 0.05)
    spent(container, key, 0.04)
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        assert classify(client, key).status_code == 202


@pytest.mark.container(daily_spend_limit_usd=1.0)
def test_the_global_limit_refuses_every_key(container) -> None:
    first, second = new_key(container, "first", None), new_key(container, "second", None)
    spent(container, first, 0.6)
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        assert classify(client, second).status_code == 202
        spent(container, second, 0.4)
        assert_exhausted(lambda: classify(client, second), "global", 1.0, 1.0)
        assert "global daily spend limit" in batch(client, first).json()["error"]["message"]


def test_get_of_a_paused_job_and_of_its_batch_says_why_and_until_when(container) -> None:
    key = new_key(container, "team", 5)
    store = container.store()
    paused_at = datetime.now(timezone.utc)
    pause = JobPause.of(BudgetExhausted("key", 5, 5.5, window_of(paused_at), paused_at), paused_at, 300)
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        job_id = classify(client, key).json()["job_id"]
        batch_id = batch(client, key).json()["batch_id"]
        batch_jobs = anyio.run(lambda: container.batches().result_page(batch_id, after=-1, limit=10))
        for paused_id in (job_id, batch_jobs[0].row.job_id):
            anyio.run(lambda paused_id=paused_id: store.record_pause(paused_id, pause))  # as the worker does
        document = client.get(f"/domains/classify/{job_id}", headers=bearer(key)).json()
        progress = client.get(f"/batches/{batch_id}", headers=bearer(key)).json()
        openapi = client.get("/openapi.json").json()
    assert document["status"] == "PENDING"
    assert (document["paused"]["limit"], document["paused"]["limit_usd"], document["paused"]["spent_usd"]) == (
        "key", 5, 5.5)
    assert document["paused"]["resets_at"] == window_of(paused_at).resets_at.isoformat()
    assert document["paused"]["next_check_at"] == (paused_at + timedelta(seconds=min(300, pause_seconds(paused_at)))
                                                   ).isoformat()
    assert progress["status"] == "RUNNING" and progress["paused"] == {**document["paused"], "jobs": 1}
    for instance, name in ((document, "Job"), (progress, "BatchProgress")):
        jsonschema.validate(instance, {**openapi, "$ref": f"#/components/schemas/{name}"})


def pause_seconds(now: datetime) -> int:
    return window_of(now).seconds_left(now)
