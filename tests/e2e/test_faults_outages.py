"""Fault injection with real processes: PostgreSQL, then the SQS queue, cut off in the middle of
a run by a TCP proxy (tests/support/tcp_proxy.py): an outage (new connections refused, open ones
reset) and a partition (every byte and connect held, nothing refused). Nothing may be lost, no
process may die, and the API must answer an error, never hang, while a backend is away."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, text

from tests.support.postgres import postgres_engine
from tests.support.processes import (
    Process,
    Processes,
    run_cli,
    start_api,
    start_worker_process,
    wait_until,
    worker_probe,
)
from tests.support.sqs_emulator import sqs_client, sqs_emulator, write_queues_file
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import HANG_SECONDS

pytestmark = pytest.mark.e2e

OUTAGE_SECONDS = 4
PARTITION_SECONDS = 12
JOBS = 30
DOMAINS_PER_JOB = 3
VISIBILITY_TIMEOUT = 3
# The API must answer during an outage or a partition: an error, not a hang. The requests are
# made while the proxy is down (or frozen until they have ended); one that is still waiting at
# HANG_SECONDS has hung. How long each took is printed, never asserted.
REPLY_QUEUE = "team-replies.fifo"

COMMON = {
    "FIRMSIFT_AUTH": "off",
    "FIRMSIFT_WAIT_TIME": "1",
    "FIRMSIFT_POLL_INTERVAL": "0.1",
    "FIRMSIFT_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
    "FIRMSIFT_MAX_RECEIVES": "20",  # an outage must not dead-letter jobs in this test
    "FIRMSIFT_LLM_CONCURRENCY": "2",
    "FIRMSIFT_WORKER_JOBS": "2",
    "FIRMSIFT_ANSWER_LEASE_SECONDS": "3",
    "FIRMSIFT_SHUTDOWN_GRACE_SECONDS": "2",
    "FIRMSIFT_LLM_MODEL": "openai/fake-model",
    "FIRMSIFT_SEARCH_PROVIDER": "searxng",
}


@dataclass
class Run:
    processes: Processes
    engine: Engine  # a direct connection to the service's database, never through the proxy
    llm_log: Path

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        with self.engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(sql)).all()]

    def start_workers(self, count: int) -> list[tuple[Process, str]]:
        """Workers with their probe on a port each binds itself: (process, probe base URL)."""
        started = [start_worker_process(self.processes) for _ in range(count)]
        return [(worker, worker_probe(worker)) for worker in started]

    def llm_calls(self) -> int:
        if not self.llm_log.exists():
            return 0
        return sum(json.loads(line)["status"] == 200 for line in self.llm_log.read_text().splitlines() if line)


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    with postgres_engine() as engine:
        processes = Processes(tmp_path)
        llm_log = tmp_path / "llm-calls.jsonl"
        try:
            _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--delay", "0.2",
                                                  "--log", str(llm_log))
            _search, search_port = processes.start_fake("tests.support.fake_search_server")
            processes.env = {**COMMON, "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
                             "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}"}
            yield Run(processes, engine, llm_log)
        finally:
            processes.kill_all()  # before the database is dropped


def submit_jobs(base: str, prefix: str, reply_queue: str | None = None) -> tuple[list[str], set[str]]:
    headers = {"X-Reply-Queue": reply_queue} if reply_queue else {}
    job_ids, domains = [], set()
    with httpx.Client(base_url=base, timeout=30) as http:
        for j in range(JOBS):
            job = [f"{prefix}{j}-{i}.com" for i in range(DOMAINS_PER_JOB)]
            response = http.post("/domains/classify", json={"domains": job}, headers=headers)
            assert response.status_code == 202, response.text
            job_ids.append(response.json()["job_id"])
            domains.update(job)
    return job_ids, domains


def timed(request: Any) -> tuple[httpx.Response | Exception, float]:
    """(response, or the transport error, and the seconds it took)."""
    started = time.monotonic()
    try:
        return request(), time.monotonic() - started
    except httpx.TransportError as error:
        return error, time.monotonic() - started


def status_of(outcome: httpx.Response | Exception) -> int | str:
    return outcome.status_code if isinstance(outcome, httpx.Response) else type(outcome).__name__


def wait_recovered(base: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[str, float]:
    """POST until the API accepts again: (the accepted job id, seconds it took)."""
    started = time.monotonic()

    def accepted() -> str | None:
        try:
            response = httpx.post(f"{base}/domains/classify", json=body, headers=headers or {}, timeout=HANG_SECONDS)
        except httpx.TransportError:
            return None
        return response.json()["job_id"] if response.status_code == 202 else None

    job_id = wait_until(accepted, HANG_SECONDS, "the API did not accept jobs again after the outage", interval=0.5)
    return job_id, time.monotonic() - started


def check_nothing_lost(run: Run, job_ids: list[str], domains: set[str], workers: list[tuple[Process, str]]) -> None:
    def finished() -> bool:
        rows = run.query("SELECT count(*) FROM jobs WHERE status IN ('DONE', 'FAILED') AND id IN ("
                         + ",".join(f"'{j}'" for j in job_ids) + ")")
        return rows[0][0] == len(job_ids)

    wait_until(finished, 90, "not every job finished after the outage", interval=0.5)
    quoted = ",".join(f"'{j}'" for j in job_ids)
    statuses = Counter(dict(run.query(f"SELECT status, count(*) FROM jobs WHERE id IN ({quoted}) GROUP BY status")))
    assert statuses == {"DONE": len(job_ids)}, statuses
    not_done = run.query(f"SELECT job_id, domain, status, error FROM job_domains WHERE job_id IN ({quoted}) "
                         "AND status <> 'DONE'")
    assert not_done == []
    assert run.query("SELECT domain, classifier FROM answers GROUP BY domain, classifier HAVING count(*) > 1") == []
    stored = {row[0] for row in run.query("SELECT domain FROM answers WHERE status = 'DONE'")}
    assert domains <= stored, sorted(domains - stored)[:10]
    # No worker died: each is running and its probe says its loop turns.
    for worker, probe in workers:
        assert worker.running, f"worker exited during the outage:\n{worker.log()[-3000:]}"
        assert httpx.get(f"{probe}/healthz", timeout=5).status_code == 200


@dataclass
class Service:
    """The API and two workers of a run, with the proxy standing between them and one backend."""

    proxy: TcpProxy
    base: str
    workers: list[tuple[Process, str]]
    sqs: Any = None  # a boto3 client through the proxy, when the proxy fronts SQS


@contextlib.contextmanager
def database_behind_proxy(run: Run) -> Iterator[Service]:
    """PostgreSQL holding jobs and the queue (no SQS), reached only through the proxy."""
    url = run.engine.url
    with TcpProxy(url.host or "127.0.0.1", url.port or 5432) as proxy:
        run.processes.env["FIRMSIFT_DATABASE_URL"] = url.set(host="127.0.0.1", port=proxy.port).render_as_string(
            hide_password=False)
        try:
            _api, base = start_api(run.processes)
            yield Service(proxy, base, run.start_workers(2))
        finally:
            run.processes.kill_all()


@contextlib.contextmanager
def queue_behind_proxy(run: Run) -> Iterator[Service]:
    """PostgreSQL direct, SQS (fauxqs) reached only through the proxy, with a FIFO reply queue."""
    with sqs_emulator() as endpoint, TcpProxy("127.0.0.1", int(endpoint.rsplit(":", 1)[1])) as proxy:
        proxied = f"http://127.0.0.1:{proxy.port}"
        # botocore sends every call to endpoint_url, whatever host a queue URL names (fauxqs puts
        # the Host it was asked on in its URLs anyway), so all queue traffic goes through the proxy.
        client = sqs_client(proxied)
        client.create_queue(QueueName=REPLY_QUEUE, Attributes={"FifoQueue": "true"})
        queues_file = write_queues_file(run.processes.folder / "queues.toml", max_receives=20,
                                        visibility_timeout=VISIBILITY_TIMEOUT)
        run.processes.env.update({
            "FIRMSIFT_DATABASE_URL": run.engine.url.render_as_string(hide_password=False),
            "FIRMSIFT_QUEUE_BACKEND": "sqs",
            "FIRMSIFT_QUEUE_NAME": "firmsift-jobs.fifo",
            "FIRMSIFT_QUEUES_FILE": str(queues_file),
            "FIRMSIFT_SQS_ENDPOINT_URL": proxied,
            "FIRMSIFT_AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
        })
        try:
            ensure = run_cli(run.processes.env, "queues", "ensure")
            assert ensure.returncode == 0, ensure.stderr
            _api, base = start_api(run.processes)
            yield Service(proxy, base, run.start_workers(2), client)
        finally:
            run.processes.kill_all()
            client.close()


def mid_run(run: Run, service: Service, prefix: str, reply_queue: str | None = None) -> tuple[list[str], set[str]]:
    """Submit the jobs and return once the workers are well into them."""
    job_ids, domains = submit_jobs(service.base, prefix, reply_queue)
    wait_until(lambda: run.query("SELECT count(*) FROM answers")[0][0] >= 15, 60, "workers answered nothing")
    return job_ids, domains


def test_a_database_outage_mid_run_loses_nothing(run: Run) -> None:
    """PostgreSQL with the queue in it (no SQS) is cut for 4 s in the middle of 30 jobs."""
    with database_behind_proxy(run) as service:
        base, proxy = service.base, service.proxy
        job_ids, domains = mid_run(run, service, "dbout")
        answered_before = run.query("SELECT count(*) FROM answers")[0][0]

        cut = proxy.stop()
        outage_started = time.monotonic()
        post, post_seconds = timed(lambda: httpx.post(f"{base}/domains/classify", json={"domains": ["during.com"]},
                                                      timeout=HANG_SECONDS))
        get, get_seconds = timed(lambda: httpx.get(f"{base}/domains/classify/{job_ids[0]}", timeout=HANG_SECONDS))
        ready, ready_seconds = timed(lambda: httpx.get(f"{base}/readyz", timeout=HANG_SECONDS))
        alive = httpx.get(f"{base}/healthz", timeout=5)
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - outage_started)))
        proxy.start()
        outage = time.monotonic() - outage_started

        recovered_job, recovery_seconds = wait_recovered(base, {"domains": ["after-db-outage.com"]})
        check_nothing_lost(run, [*job_ids, recovered_job], domains | {"after-db-outage.com"}, service.workers)
        during = run.query("SELECT count(*) FROM job_domains WHERE domain = 'during.com'")[0][0]
        print(f"\ndb-outage: outage={outage:.1f}s with {answered_before}/{len(domains)} domains answered;"
              f" connections_cut={cut} POST={status_of(post)} in {post_seconds:.2f}s"
              f" GET={status_of(get)} in {get_seconds:.2f}s readyz={status_of(ready)} in {ready_seconds:.2f}s"
              f" healthz={alive.status_code}; POST accepted again {recovery_seconds:.1f}s after the proxy came back;"
              f" jobs={len(job_ids) + 1} all DONE; llm_calls={run.llm_calls()} for {len(domains) + 1} domains")

        # During the outage (the requests were all made before the proxy came back) the API said
        # so: 503 on submit (nothing recorded), an error on poll. A hang would be a timeout here.
        assert isinstance(post, httpx.Response) and post.status_code == 503, status_of(post)
        assert post.json()["error"]["code"] == "queue_unavailable" and "Retry-After" in post.headers
        assert during == 0  # the refused job left no row behind
        assert isinstance(get, httpx.Response) and get.status_code in (500, 503), status_of(get)
        assert isinstance(ready, httpx.Response) and ready.status_code == 503
        assert ready.json()["checks"]["database"] != "ok"
        assert alive.status_code == 200  # liveness is not readiness: the process itself is fine
        assert cut > 0  # the outage really cut live connections


def test_a_queue_outage_mid_run_loses_nothing(run: Run) -> None:
    """SQS is cut for 4 s in the middle of 30 jobs that name a reply queue."""
    with queue_behind_proxy(run) as service:
        base, proxy = service.base, service.proxy
        job_ids, domains = mid_run(run, service, "qout", reply_queue=REPLY_QUEUE)
        answered_before = run.query("SELECT count(*) FROM answers")[0][0]

        cut = proxy.stop()
        outage_started = time.monotonic()
        post, post_seconds = timed(lambda: httpx.post(f"{base}/domains/classify",
                                                      json={"domains": ["during-queue-outage.com"]},
                                                      timeout=HANG_SECONDS))
        get, _ = timed(lambda: httpx.get(f"{base}/domains/classify/{job_ids[0]}", timeout=HANG_SECONDS))
        ready, ready_seconds = timed(lambda: httpx.get(f"{base}/readyz", timeout=HANG_SECONDS))
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - outage_started)))
        proxy.start()
        outage = time.monotonic() - outage_started

        recovered_job, recovery_seconds = wait_recovered(base, {"domains": ["after-queue-outage.com"]},
                                                         {"X-Reply-Queue": REPLY_QUEUE})
        check_nothing_lost(run, [*job_ids, recovered_job], domains | {"after-queue-outage.com"}, service.workers)
        refused = run.query("SELECT j.status, j.error FROM jobs j JOIN job_domains d ON d.job_id = j.id "
                            "WHERE d.domain = 'during-queue-outage.com'")
        replies = read_replies(service.sqs, {*job_ids, recovered_job})
        print(f"\nqueue-outage: outage={outage:.1f}s with {answered_before}/{len(domains)} domains answered;"
              f" connections_cut={cut} POST={status_of(post)} in {post_seconds:.2f}s"
              f" (job left {refused[0][0] if refused else None}) GET={status_of(get)}"
              f" readyz={status_of(ready)} in {ready_seconds:.2f}s; POST accepted again {recovery_seconds:.1f}s"
              f" after the proxy came back; jobs={len(job_ids) + 1} all DONE; replies={len(replies)};"
              f" llm_calls={run.llm_calls()} for {len(domains) + 1} domains")

        # The publish gap: the row was written, the publish failed, so 503 and a FAILED job,
        # never one left PENDING without a message.
        assert isinstance(post, httpx.Response) and post.status_code == 503, status_of(post)
        assert post.json()["error"]["code"] == "queue_unavailable"
        assert len(refused) == 1 and refused[0][0] == "FAILED" and "could not be queued" in refused[0][1]
        assert isinstance(get, httpx.Response) and get.status_code == 200  # the database is fine
        assert isinstance(ready, httpx.Response) and ready.status_code == 503
        assert ready.json()["checks"]["queue"] != "ok" and ready.json()["checks"]["database"] == "ok"
        # Every job's reply arrived (at least once; callers dedupe on job_id), each DONE.
        assert set(replies) == {*job_ids, recovered_job}
        assert {document["status"] for document in replies.values()} == {"DONE"}


def during_partition(service: Service, requests: dict[str, Any]) -> dict[str, tuple[httpx.Response | Exception, float]]:
    """Freeze the proxy while `requests` (name -> call) run side by side, until every one has
    ended and for PARTITION_SECONDS at least; return each one's outcome and duration. A request
    still waiting at HANG_SECONDS hung: the test fails (after the partition heals)."""
    outcomes: dict[str, tuple[httpx.Response | Exception, float]] = {}
    service.proxy.freeze()
    try:
        started = time.monotonic()
        threads = {name: threading.Thread(target=lambda n=name, r=request: outcomes.__setitem__(n, timed(r)),
                                          daemon=True) for name, request in requests.items()}
        for thread in threads.values():
            thread.start()
        for thread in threads.values():
            thread.join(HANG_SECONDS)
        hung = [name for name, thread in threads.items() if thread.is_alive()]
        time.sleep(max(0.0, PARTITION_SECONDS - (time.monotonic() - started)))
    finally:
        service.proxy.thaw()
    assert hung == [], f"no answer while the partition lasted: {hung}"
    return outcomes


def partition(run: Run, service: Service, prefix: str, backend: str) -> dict[str, tuple[Any, float]]:
    """A network partition (the proxy holds every byte and connect) of PARTITION_SECONDS in the
    middle of 30 jobs: afterwards nothing is lost and no process died. Returns what the API
    answered during it."""
    base = service.base
    job_ids, domains = mid_run(run, service, prefix)
    outcomes = during_partition(service, {
        # The client waits longer than the partition can last: a hang shows as one, not as its timeout.
        "POST": lambda: httpx.post(f"{base}/domains/classify", json={"domains": [f"during-{prefix}.com"]},
                                   timeout=2 * HANG_SECONDS),
        "GET": lambda: httpx.get(f"{base}/domains/classify/{job_ids[0]}", timeout=2 * HANG_SECONDS),
        "readyz": lambda: httpx.get(f"{base}/readyz", timeout=2 * HANG_SECONDS),
    })
    accepted = [o.json()["job_id"] for o, _ in [outcomes["POST"]] if isinstance(o, httpx.Response)
                and o.status_code == 202]
    check_nothing_lost(run, [*job_ids, *accepted], domains | ({f"during-{prefix}.com"} if accepted else set()),
                       service.workers)
    print(f"\n{backend}-partition: {PARTITION_SECONDS}s; "
          + " ".join(f"{name}={status_of(o)} in {s:.1f}s" for name, (o, s) in outcomes.items())
          + f"; afterwards all {len(job_ids) + len(accepted)} jobs DONE, workers alive")
    ready, _ = outcomes["readyz"]
    assert isinstance(ready, httpx.Response) and ready.status_code == 503  # during the partition
    return outcomes


def not_answered_with_an_error(outcomes: dict[str, tuple[Any, float]], names: list[str]) -> list[str]:
    """The requests of `names` that, during the partition, did not get an error answer (5xx)."""
    return [f"{name} {status_of(outcomes[name][0])} after {outcomes[name][1]:.1f}s" for name in names
            if not isinstance(outcomes[name][0], httpx.Response) or outcomes[name][0].status_code < 500]


def test_a_database_partition_is_survived_and_the_api_answers_an_error_not_a_hang(run: Run) -> None:
    with database_behind_proxy(run) as service:
        outcomes = partition(run, service, "dbpart", "db")
    # The API bounds its waits on the database (FIRMSIFT_BACKEND_TIMEOUT): an error, not a hang.
    assert not_answered_with_an_error(outcomes, ["POST", "GET"]) == []


def test_a_queue_partition_is_survived_and_the_api_answers_an_error_not_a_hang(run: Run) -> None:
    with queue_behind_proxy(run) as service:
        outcomes = partition(run, service, "qpart", "sqs")
    # The API bounds its publish (FIRMSIFT_BACKEND_TIMEOUT) and marks the job FAILED: no hang.
    assert not_answered_with_an_error(outcomes, ["POST"]) == []


def read_replies(client: Any, wanted: set[str], timeout: float = 30) -> dict[str, dict[str, Any]]:
    url = client.get_queue_url(QueueName=REPLY_QUEUE)["QueueUrl"]
    replies: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while not wanted <= set(replies) and time.monotonic() < deadline:
        for message in client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get(
                "Messages", []):
            document = json.loads(message["Body"])
            replies[document["job_id"]] = document
            client.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return replies
