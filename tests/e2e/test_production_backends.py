"""End to end on the production shape: `firmsift api` and two `firmsift worker` processes on
PostgreSQL and SQS (fauxqs), queues created by `firmsift queues ensure`, replies read from a
FIFO reply queue with boto3, and one worker killed with -9 mid-run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from tests.support.postgres import postgres_engine
from tests.support.processes import Processes, refusing_port, start_api, wait_until
from tests.support.sqs_emulator import sqs_client, sqs_emulator

pytestmark = pytest.mark.e2e
JOBS = 30
DOMAINS_PER_JOB = 5
REPLY_QUEUE = "team-replies.fifo"


@pytest.fixture
def production(tmp_path: Path) -> Iterator[dict]:
    with postgres_engine() as engine, sqs_emulator() as endpoint:
        database_url = engine.url.render_as_string(hide_password=False)
        client = sqs_client(endpoint)
        client.create_queue(QueueName=REPLY_QUEUE, Attributes={"FifoQueue": "true"})
        processes = Processes(tmp_path)
        llm_log = tmp_path / "llm-calls.jsonl"
        try:
            _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--delay", "0.3",
                                                  "--log", str(llm_log))
            _search, search_port = processes.start_fake("tests.support.fake_search_server")
            processes.env = {
                "FIRMSIFT_DATABASE_URL": database_url,
                "FIRMSIFT_QUEUE_BACKEND": "sqs",
                "FIRMSIFT_QUEUE_NAME": "firmsift-jobs.fifo",
                "FIRMSIFT_SQS_ENDPOINT_URL": endpoint,
                "FIRMSIFT_AWS_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": "test",
                "AWS_SECRET_ACCESS_KEY": "test",
                "FIRMSIFT_VISIBILITY_TIMEOUT": "4",
                "FIRMSIFT_WAIT_TIME": "1",
                "FIRMSIFT_LLM_MODEL": "openai/fake-model",
                "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
                "FIRMSIFT_SEARCH_PROVIDER": "searxng",
                "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
                "FIRMSIFT_LLM_CONCURRENCY": "4",
            }
            ensure = run_cli(processes.env, "queues", "ensure")
            assert ensure.returncode == 0, ensure.stderr
            assert "firmsift-jobs.fifo: created" in ensure.stdout
            again = run_cli(processes.env, "queues", "drift")
            assert again.returncode == 0 and again.stdout.count("in sync") == 2, again.stdout
            api, base = start_api(processes)
            yield {"processes": processes, "base": base, "engine": engine, "client": client,
                   "llm_log": llm_log, "api": api}
        finally:
            processes.stop_all()
            client.close()


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", *args], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=120)


def test_many_jobs_two_workers_one_killed_every_job_completes_once(production: dict) -> None:
    base, processes, client = production["base"], production["processes"], production["client"]
    assert httpx.get(f"{base}/readyz").json()["checks"] == {"database": "ok", "database_writes": "ok", "queue": "ok", "intake": "ok"}
    doomed = processes.firmsift("worker-a", "worker")
    processes.firmsift("worker-b", "worker")
    job_ids = []
    for j in range(JOBS):
        # Every third job repeats a domain of an earlier job: cached or shared, never duplicated.
        domains = [f"brand{j}-{i}.com" for i in range(DOMAINS_PER_JOB - 1)] + [f"brand{j // 3}-0.com"]
        response = httpx.post(f"{base}/domains/classify", json={"domains": domains},
                              headers={"X-Reply-Queue": REPLY_QUEUE})
        assert response.status_code == 202, response.text
        job_ids.append(response.json()["job_id"])

    def answered() -> int:
        with production["engine"].connect() as conn:
            return conn.execute(text("SELECT count(*) FROM answers")).scalar_one()

    wait_until(lambda: answered() >= 20, 60, "workers answered nothing")
    doomed.kill()

    def all_finished() -> bool:
        return all(httpx.get(f"{base}/domains/classify/{j}").json()["status"] in ("DONE", "FAILED") for j in job_ids)

    wait_until(all_finished, 120, "not every job finished after the kill", interval=0.5)
    documents = [httpx.get(f"{base}/domains/classify/{j}").json() for j in job_ids]
    assert {d["status"] for d in documents} == {"DONE"}
    assert all(r["status"] == "DONE" for d in documents for r in d["results"])

    unique = {r["domain"] for d in documents for r in d["results"]}
    with production["engine"].connect() as conn:
        rows = conn.execute(text("SELECT domain, count(*) FROM answers GROUP BY domain")).all()
    assert len(rows) == len(unique) and all(count == 1 for _domain, count in rows)

    calls = Counter(json.loads(line)["domain"] for line in production["llm_log"].read_text().splitlines()
                    if json.loads(line)["status"] == 200)
    assert set(calls) == unique
    jobs_per_domain = Counter(r["domain"] for d in documents for r in d["results"])
    exclusive = [domain for domain, jobs in jobs_per_domain.items() if jobs == 1]
    # A domain of one job is asked again only if it was in flight on the killed worker:
    # at most that worker's LLM concurrency (4) in all.
    assert sum(calls[d] - 1 for d in exclusive) <= 4, calls.most_common(8)
    # A domain shared by jobs is asked at most once per worker that took it at the same time
    # (single flight is per worker; issue 4 arbitrates across workers), plus a kill.
    assert all(calls[d] <= 3 for d in jobs_per_domain if jobs_per_domain[d] > 1), calls.most_common(8)

    replies: dict[str, dict] = {}
    url = client.get_queue_url(QueueName=REPLY_QUEUE)["QueueUrl"]
    deadline = time.monotonic() + 60
    while len(replies) < JOBS and time.monotonic() < deadline:
        for message in client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                              AttributeNames=["MessageGroupId"]).get("Messages", []):
            document = json.loads(message["Body"])
            replies[document["job_id"]] = document  # callers dedupe replies on job_id
            assert message["Attributes"]["MessageGroupId"] == document["job_id"]
            client.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert sorted(replies) == sorted(job_ids)
    assert all(document["status"] == "DONE" for document in replies.values())

    metrics = httpx.get(f"{base}/metrics").text
    assert f"firmsift_jobs_accepted_total {float(JOBS)}" in metrics


def test_an_unreachable_sqs_is_503_and_the_job_is_never_left_pending(tmp_path: Path) -> None:
    """The publish gap on SQS: the row is written, the publish fails, the caller gets 503 and
    the job is marked FAILED instead of waiting forever for a message that does not exist."""
    with postgres_engine() as engine, refusing_port() as sqs_port:
        processes = Processes(tmp_path)
        processes.env = {
            "FIRMSIFT_DATABASE_URL": engine.url.render_as_string(hide_password=False),
            "FIRMSIFT_QUEUE_BACKEND": "sqs",
            "FIRMSIFT_SQS_QUEUE_URL": f"http://127.0.0.1:{sqs_port}/000000000000/firmsift-jobs.fifo",
            "FIRMSIFT_SQS_ENDPOINT_URL": f"http://127.0.0.1:{sqs_port}",
            "FIRMSIFT_AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test-secret-never-logged",
        }
        try:
            api, base = start_api(processes)
            ready = httpx.get(f"{base}/readyz", timeout=30)
            assert ready.status_code == 503 and ready.json()["checks"]["queue"] != "ok"
            response = httpx.post(f"{base}/domains/classify", json={"domains": ["a.com"]}, timeout=60)
            assert response.status_code == 503, response.text
            assert response.json()["error"]["code"] == "queue_unavailable"
            with engine.connect() as conn:
                rows = conn.execute(text("SELECT status, error FROM jobs")).all()
            assert len(rows) == 1 and rows[0][0] == "FAILED" and "could not be queued" in rows[0][1]
        finally:
            processes.stop_all()
        assert "test-secret-never-logged" not in api.log()
