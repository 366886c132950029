"""Economy mode with real processes: `firmsift api` and `firmsift worker` against the scripted
batch server; the worker is killed with -9 while its provider batch runs and started again: no
domain is lost, no provider batch is submitted twice, and every answer costs the batch price."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.fake_openai_batch_server import FakeOpenAIBatchServer, Script
from tests.support.fake_search_server import FakeSearchServer
from tests.support.processes import Processes, start_api, start_worker, wait_until
from tests.support.waiting import HANG_SECONDS

pytestmark = pytest.mark.e2e
DOMAINS = [f"company-{n:03d}.com" for n in range(40)]
NORMAL_COST = (10 * 1.0 + 10 * 2.0) / 1_000_000  # the scripted server's 10 tokens in and out, at 1 and 2 USD/M
HELD = 3600.0  # seconds each batch status lasts at least: longer than the test


@pytest.fixture
def batch_server() -> Iterator[FakeOpenAIBatchServer]:
    # Until the test lets them go on (see below), batches stay as they were created.
    server = FakeOpenAIBatchServer(Script(pace=HELD))
    with server:
        yield server


@pytest.fixture
def processes(tmp_path: Path, batch_server: FakeOpenAIBatchServer) -> Iterator[Processes]:
    with FakeSearchServer() as search:
        processes = Processes(tmp_path, env={
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'firmsift.db'}", "FIRMSIFT_AUTH": "off",
            "FIRMSIFT_WAIT_TIME": "1", "FIRMSIFT_POLL_INTERVAL": "0.1", "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": search.base_url, "FIRMSIFT_LLM_MODEL": "openai/fake-model",
            "FIRMSIFT_LLM_API_BASE": batch_server.base_url, "FIRMSIFT_LLM_API_KEY": "sk-test",
            "FIRMSIFT_LLM_INPUT_COST_PER_MILLION": "1", "FIRMSIFT_LLM_OUTPUT_COST_PER_MILLION": "2",
            "FIRMSIFT_ECONOMY_POLL_SECONDS": "0.3", "FIRMSIFT_ANSWER_LEASE_SECONDS": "2",
        })
        try:
            yield processes
        finally:
            processes.kill_all()


def test_a_worker_killed_mid_provider_batch_loses_nothing_and_submits_nothing_twice(
        processes: Processes, batch_server: FakeOpenAIBatchServer) -> None:
    _api, base = start_api(processes)
    worker, _probe = start_worker(processes)
    submitted = httpx.post(f"{base}/batches", json={"classifier": "cpg", "mode": "economy", "domains": DOMAINS},
                           timeout=30)
    assert submitted.status_code == 202, submitted.text
    batch_id = submitted.json()["batch_id"]
    assert submitted.json()["mode"] == "economy"
    # The jobs defer their questions as they run; each round sends what has gathered since the last.
    wait_until(lambda: sum(map(len, batch_server.uploads.values())) == len(DOMAINS), 60, "questions not all sent")
    wait_until(lambda: len(batch_server.created) == len(batch_server.uploads), HANG_SECONDS, "an upload has no batch")
    worker.kill()  # mid-batch: every provider batch is held where it began, however slow the machine
    submitted_batches = list(batch_server.created)
    assert {batch_server.batches[b]["status"] for b in submitted_batches} == {"validating"}
    assert httpx.get(f"{base}/batches/{batch_id}", timeout=10).json()["status"] == "RUNNING"

    batch_server.script.pace = 1.0  # from now on each status lasts a second at least
    start_worker(processes, "worker-again")
    deadline = time.monotonic() + 90  # only turns a stuck batch into a failure
    while (progress := httpx.get(f"{base}/batches/{batch_id}", timeout=10).json())["status"] != "DONE":
        assert time.monotonic() < deadline, progress
        time.sleep(0.3)
    assert (progress["done"], progress["failed"], progress["pending"]) == (len(DOMAINS), 0, 0)
    assert progress["by_source"] == {"llm": len(DOMAINS)}
    assert batch_server.created == submitted_batches  # resumed, not resubmitted
    asked = [line["custom_id"] for lines in batch_server.uploads.values() for line in lines]
    assert sorted(asked) == sorted(f"cpg/{domain}" for domain in DOMAINS)  # each question sent once
    assert progress["spend"]["cost_usd"] == pytest.approx(len(DOMAINS) * NORMAL_COST / 2)  # the batch price
    rows = httpx.get(f"{base}/batches/{batch_id}/results", timeout=10).text.splitlines()
    assert len(rows) == len(DOMAINS) and all('"status": "DONE"' in row for row in rows)
