"""Retrying a batch's failed rows through the API, on the in-memory graph, SQLite and PostgreSQL:
the failed domains are asked again, answered ones are not (nothing paid twice), a cancelled
batch is refused, another key's batch is not found."""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio
import pytest
from dependency_injector import providers
from starlette.testclient import TestClient

from firmsift.adapters.memory.providers import ScriptedLLM, StaticSearch
from firmsift.domain.errors import ProviderError
from firmsift.entrypoints.wiring.container import Container
from firmsift.services.keys import create_key
from firmsift.services.process import process_job

YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "makes and sells packaged snacks"}'
DOMAINS = ["good.com", "bad.com", "other.com", "worse.com"]


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def served(request: pytest.FixtureRequest, make_container: Callable[..., Container],
           api_client: Callable[..., TestClient]) -> tuple[Container, TestClient, dict, ScriptedLLM]:
    """A graph of the backend with keys required, its API, a key's header, and an LLM that fails
    for bad.com and worse.com (not retryable: they fail at once)."""
    llm = ScriptedLLM(YES, by_domain={d: ProviderError(f"{d}: the model refused", retryable=False)
                                      for d in ("bad.com", "worse.com")})
    container = make_container(backend=request.param, auth="required", rate_limit_per_minute=0, precheck=False,
                               max_domains_per_job=2)
    container.llm.override(llm)
    container.searches.override(providers.Object((StaticSearch(),)))
    key = anyio.run(lambda: create_key("team", [], container.api_keys()))
    client = api_client(container.api(), raise_server_exceptions=True)
    return container, client, {"Authorization": f"Bearer {key.secret}"}, llm


def work_off(container: Container) -> int:
    """Every job message on the work queue processed to its end, as a worker does; how many."""
    async def drain() -> int:
        queue, done = container.work_queue(), 0
        while messages := await queue.receive(max_messages=10):
            for message in messages:
                await process_job(json.loads(message.body)["job_id"], container.job_dependencies())
                await queue.delete(message.receipt)
                done += 1
        return done
    return anyio.run(drain)


def test_failed_rows_are_asked_again_and_answered_ones_are_not(served) -> None:  # noqa: ANN001
    container, client, key, llm = served
    batch = client.post("/batches", json={"domains": DOMAINS}, headers=key).json()["batch_id"]
    assert work_off(container) == 2  # two jobs of two domains
    shown = client.get(f"/batches/{batch}", headers=key).json()
    assert (shown["status"], shown["done"], shown["failed"]) == ("DONE", 2, 2)

    llm.by_domain.clear()  # the model answers again
    retried = client.post(f"/batches/{batch}/retry", headers=key)
    assert retried.status_code == 200, retried.text
    assert (retried.json()["retried_jobs"], retried.json()["status"], retried.json()["pending"]) == (2, "RUNNING", 2)
    assert work_off(container) == 2
    shown = client.get(f"/batches/{batch}", headers=key).json()
    assert (shown["status"], shown["done"], shown["failed"]) == ("DONE", 4, 0)
    lines = [json.loads(line) for line in client.get(f"/batches/{batch}/results", headers=key).text.splitlines()]
    assert [(line["classified_domain"], line["status"], line["answer"]) for line in lines] == [
        (domain, "DONE", True) for domain in DOMAINS]
    assert {d: llm.calls_about(d) for d in DOMAINS} == {"good.com": 1, "bad.com": 2, "other.com": 1, "worse.com": 2}

    again = client.post(f"/batches/{batch}/retry", headers=key).json()
    assert again["retried_jobs"] == 0 and work_off(container) == 0  # nothing failed: nothing queued


def test_a_cancelled_batch_is_not_retried_and_another_keys_batch_is_not_found(served) -> None:  # noqa: ANN001
    container, client, key, _llm = served
    batch = client.post("/batches", json={"domains": DOMAINS}, headers=key).json()["batch_id"]
    assert client.delete(f"/batches/{batch}", headers=key).json()["cancelled_jobs"] == 2
    refused = client.post(f"/batches/{batch}/retry", headers=key)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "batch_cancelled"
    other = anyio.run(lambda: create_key("other", [], container.api_keys()))
    missing = client.post(f"/batches/{batch}/retry", headers={"Authorization": f"Bearer {other.secret}"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "batch_not_found"


def test_the_command_line_retries_failed_rows_and_cancels(make_container: Callable[..., Container]) -> None:
    from tests.support.processes import run_cli

    llm = ScriptedLLM(YES, by_domain={"bad.com": ProviderError("bad.com: the model refused", retryable=False)})
    container = make_container(precheck=False, max_domains_per_job=2)
    url = container.settings().database_url
    container.llm.override(llm)
    container.searches.override(providers.Object((StaticSearch(),)))
    with TestClient(container.api()) as client:
        batch = client.post("/batches", json={"domains": DOMAINS[:2]}).json()["batch_id"]
        work_off(container)
        llm.by_domain.clear()
        retried = run_cli({"FIRMSIFT_DATABASE_URL": url}, "batch", "retry", batch)
        assert (retried.returncode, retried.stdout) == (
            0, f"batch {batch}: 1 job(s) with failed rows queued again; answered rows are kept\n")
        assert work_off(container) == 1
        assert client.get(f"/batches/{batch}").json()["done"] == 2
        assert llm.calls_about("good.com") == 1

        later = client.post("/batches", json={"domains": ["late.com"]}).json()["batch_id"]
        cancelled = run_cli({"FIRMSIFT_DATABASE_URL": url}, "batch", "cancel", later)
        assert cancelled.stdout == f"batch {later}: 1 job(s) cancelled; work started or finished is kept\n"
        refused = run_cli({"FIRMSIFT_DATABASE_URL": url}, "batch", "retry", later)
        assert refused.returncode == 1 and "was cancelled: its failed rows are not retried" in refused.stderr
        missing = run_cli({"FIRMSIFT_DATABASE_URL": url}, "batch", "retry", "not-a-batch")
        assert missing.returncode == 1 and "no batch with id 'not-a-batch'" in missing.stderr


def test_a_failure_that_was_billed_keeps_its_spend_and_is_not_retried(served) -> None:  # noqa: ANN001
    """An answer that could not be read was paid for: retrying would drop its cost from the spend
    ledger and the batch's spend, which add up the rows; it stays failed, on record."""
    container, client, key, llm = served
    llm.tokens = (100, 20)  # the provider reports what it billed
    llm.by_domain["bad.com"] = "not the JSON asked for"  # answered, billed, unreadable
    batch = client.post("/batches", json={"domains": ["good.com", "bad.com", "worse.com"]}, headers=key).json()
    work_off(container)
    before = client.get(f"/batches/{batch['batch_id']}", headers=key).json()
    assert (before["done"], before["failed"]) == (1, 2)
    llm.by_domain.clear()
    retried = client.post(f"/batches/{batch['batch_id']}/retry", headers=key).json()
    assert retried["retried_jobs"] == 1  # worse.com's job: its call failed unbilled
    work_off(container)
    after = client.get(f"/batches/{batch['batch_id']}", headers=key).json()
    assert (after["done"], after["failed"]) == (2, 1)
    assert after["spend"]["tokens_in"] == before["spend"]["tokens_in"] + 100  # worse.com's answer added, nothing lost
    assert llm.calls_about("bad.com") == 1
