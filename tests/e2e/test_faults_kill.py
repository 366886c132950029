"""Fault injection with real processes: workers killed with -9 at random moments while a hundred
jobs run, on the embedded default (SQLite, queue in the database) and on the production shape
(PostgreSQL and SQS); and a poison job that kills its worker until it is dead-lettered.

Run with `pytest -s` to see the figures of each chaos run; FIRMSIFT_CHAOS_SEED replays a run's
kill schedule."""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tests.support.fake_llm_server import FakeLLMServer, requested_domain
from tests.support.fake_search_server import FakeSearchServer
from tests.support.postgres import postgres_engine
from tests.support.processes import Process, Processes, run_cli, start_api, wait_until
from tests.support.sqs_emulator import sqs_client, sqs_emulator, write_queues_file

pytestmark = pytest.mark.e2e

LLM_DELAY = 0.2  # seconds per fake LLM answer
LLM_CONCURRENCY = 2  # per worker
# A worker holds at most WORKER_JOBS x DOMAIN_CONCURRENCY domains between "asked" and "stored";
# kept equal to LLM_CONCURRENCY, so a kill can lose at most LLM_CONCURRENCY calls, whether
# in flight or answered and not yet stored (the LLM slot is freed before the answer is stored).
WORKER_JOBS = 2
DOMAIN_CONCURRENCY = 1
assert WORKER_JOBS * DOMAIN_CONCURRENCY == LLM_CONCURRENCY
VISIBILITY_TIMEOUT = 3
SHARED_DOMAINS = 10  # every job also asks one of these: cache, single flight and leases at work

# Settings every process of these tests gets. Redelivery within seconds; a build that does not
# know a setting yet (FIRMSIFT_AUTH, the lease length) ignores it.
FAST_REDELIVERY = {
    "FIRMSIFT_AUTH": "off",
    "FIRMSIFT_WAIT_TIME": "1",
    "FIRMSIFT_POLL_INTERVAL": "0.1",
    "FIRMSIFT_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
    "FIRMSIFT_LLM_CONCURRENCY": str(LLM_CONCURRENCY),
    "FIRMSIFT_WORKER_JOBS": str(WORKER_JOBS),
    "FIRMSIFT_DOMAIN_CONCURRENCY": str(DOMAIN_CONCURRENCY),
    "FIRMSIFT_ANSWER_LEASE_SECONDS": "3",
    "FIRMSIFT_SHUTDOWN_GRACE_SECONDS": "2",
    "FIRMSIFT_DEAD_LETTER_CHECK_INTERVAL": "1",
    "FIRMSIFT_LLM_MODEL": "openai/fake-model",
    "FIRMSIFT_SEARCH_PROVIDER": "searxng",
}


@dataclass(frozen=True)
class LLMCall:
    at: float  # time.time() when the request arrived
    worker: str  # the API key of the worker that asked
    domain: str


class RecordingLLM:
    """The scripted fake LLM server, run in the test process, recording which worker asked about
    which domain and when (each worker has its own API key), so repeated calls can be traced to
    the kill that lost them. `on_call` runs before the answer is sent. Connections are kept alive
    between requests, as OpenAI's API does: see running_fakes."""

    def __init__(self, delay: float) -> None:
        self.server = FakeLLMServer(delay=delay, keep_alive=True)
        self.calls: list[LLMCall] = []
        self.on_call: Callable[[LLMCall], None] = lambda call: None
        self._lock = threading.Lock()
        answer = self.server.respond

        def respond(received: Any) -> Any:
            call = LLMCall(time.time(), received.headers.get("authorization", "").removeprefix("Bearer "),
                           requested_domain(received.body) or "")
            with self._lock:
                self.calls.append(call)
            self.on_call(call)
            return answer(received)

        self.server.respond = respond  # type: ignore[method-assign]

    def recorded(self) -> list[LLMCall]:
        with self._lock:
            return list(self.calls)


@dataclass
class Stack:
    """A running API on one backend, its fakes, and what a test needs to look inside."""

    processes: Processes
    base: str
    llm: RecordingLLM
    query: Callable[[str], list[tuple[Any, ...]]]  # SQL on the service's database
    queue_counts: Callable[[], tuple[int, int]]  # messages on (the work queue, its dead-letter queue)
    workers: dict[str, Process] = field(default_factory=dict)  # by API key

    def start_worker(self) -> tuple[str, Process]:
        key = f"worker-{len(self.workers)}"
        process = self.processes.firmsift("worker", "worker", extra_env={"FIRMSIFT_LLM_API_KEY": key})
        self.workers[key] = process
        return key, process


@contextlib.contextmanager
def running_fakes(delay: float) -> Iterator[tuple[RecordingLLM, FakeSearchServer]]:
    """A recording LLM answering after `delay` seconds and a fake search server, both running.

    Both keep connections alive (HTTP/1.1), as OpenAI's API and SearXNG do: a worker then reuses
    its connections instead of opening two a domain (~4% of a big list's worker CPU went to
    connecting). The fakes' default of a connection per request is for tests that stop a server
    while a client lives on; these outlive every process the test starts."""
    llm = RecordingLLM(delay)
    llm.server.start()
    try:
        with FakeSearchServer(keep_alive=True) as search:
            yield llm, search
    finally:
        llm.server.stop()


@pytest.fixture
def fakes() -> Iterator[tuple[RecordingLLM, FakeSearchServer]]:
    with running_fakes(LLM_DELAY) as both:
        yield both


def provider_env(llm: RecordingLLM, search: FakeSearchServer) -> dict[str, str]:
    return {**FAST_REDELIVERY, "FIRMSIFT_LLM_API_BASE": llm.server.base_url, "FIRMSIFT_SEARXNG_URL": search.base_url}


def embedded_stack(tmp_path: Path, llm: RecordingLLM, search: FakeSearchServer,
                   **settings: str) -> Iterator[Stack]:
    """`firmsift api` on a SQLite file holding the queue too."""
    processes = Processes(tmp_path)
    db = tmp_path / "firmsift.db"

    def query(sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(db, timeout=30) as conn:
            return conn.execute(sql).fetchall()

    processes.env = {**provider_env(llm, search), "FIRMSIFT_DATABASE_URL": f"sqlite:///{db}", **settings}
    try:
        _api, base = start_api(processes)

        def queue_counts() -> tuple[int, int]:
            counts = dict(query("SELECT queue, count(*) FROM queue_messages GROUP BY queue"))
            return counts.get("firmsift-jobs", 0), counts.get("firmsift-jobs-dlq", 0)

        yield Stack(processes, base, llm, query, queue_counts)
    finally:
        processes.kill_all()


@pytest.fixture
def embedded(tmp_path: Path, fakes: tuple[RecordingLLM, FakeSearchServer]) -> Iterator[Stack]:
    # A job on a worker killed several times must not be dead-lettered in the chaos run.
    yield from embedded_stack(tmp_path, *fakes, FIRMSIFT_MAX_RECEIVES="20")


def sqs_counts(client: Any) -> tuple[int, int]:
    def count(name: str) -> int:
        url = client.get_queue_url(QueueName=name)["QueueUrl"]
        attributes = client.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(attributes["ApproximateNumberOfMessagesNotVisible"])

    return count("firmsift-jobs.fifo"), count("firmsift-jobs-dlq.fifo")


def production_stack(tmp_path: Path, llm: RecordingLLM, search: FakeSearchServer, *, max_receives: int,
                     **settings: str) -> Iterator[Stack]:
    """`firmsift api` on PostgreSQL and SQS (fauxqs), queues made by `firmsift queues ensure`
    with a redrive policy of `max_receives`."""
    with postgres_engine() as engine, sqs_emulator() as endpoint:
        client = sqs_client(endpoint)
        processes = Processes(tmp_path)

        def query(sql: str) -> list[tuple[Any, ...]]:
            with engine.connect() as conn:
                return [tuple(row) for row in conn.execute(text(sql)).all()]

        processes.env = {
            **provider_env(llm, search),
            "FIRMSIFT_DATABASE_URL": engine.url.render_as_string(hide_password=False),
            "FIRMSIFT_QUEUE_BACKEND": "sqs",
            "FIRMSIFT_QUEUE_NAME": "firmsift-jobs.fifo",
            "FIRMSIFT_QUEUES_FILE": str(write_queues_file(
                tmp_path / "queues.toml", max_receives=max_receives, visibility_timeout=VISIBILITY_TIMEOUT)),
            "FIRMSIFT_MAX_RECEIVES": str(max_receives),
            "FIRMSIFT_SQS_ENDPOINT_URL": endpoint,
            "FIRMSIFT_AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            **settings,
        }
        try:
            ensure = run_cli(processes.env, "queues", "ensure")
            assert ensure.returncode == 0, ensure.stderr
            _api, base = start_api(processes)
            yield Stack(processes, base, llm, query, lambda: sqs_counts(client))
        finally:
            processes.kill_all()
            client.close()


@pytest.fixture
def production(tmp_path: Path, fakes: tuple[RecordingLLM, FakeSearchServer]) -> Iterator[Stack]:
    # A job on a worker killed several times must not be dead-lettered in the chaos run.
    yield from production_stack(tmp_path, *fakes, max_receives=20)


def submit_all(base: str, jobs: int, domains_per_job: int) -> tuple[list[str], set[str]]:
    """Submit `jobs` jobs of `domains_per_job` domains: all but one unique to the job, the last
    one of SHARED_DOMAINS shared ones. Returns the job ids and the set of domains."""
    job_ids: list[str] = []
    domains: set[str] = set()
    with httpx.Client(base_url=base, timeout=30) as http:
        for j in range(jobs):
            job = [f"chaos{j}-{i}.com" for i in range(domains_per_job - 1)] + [f"shared{j % SHARED_DOMAINS}.com"]
            response = http.post("/domains/classify", json={"classifier": "cpg", "domains": job})
            assert response.status_code == 202, response.text
            job_ids.append(response.json()["job_id"])
            domains.update(job)
    return job_ids, domains


def busy(worker: Process) -> bool:
    """The worker has started answering (a kill then loses work in hand, not an idle start-up)."""
    return worker.running and '"domain answered"' in worker.log()


@dataclass
class Figures:
    backend: str
    jobs: int
    job_domains: int
    unique_domains: int
    kills: int
    lost_jobs: int  # jobs not DONE at the end
    unfinished_domains: int  # job_domains rows not DONE
    duplicate_answer_rows: int  # answers rows beyond one per (domain, classifier)
    llm_calls: int
    extra_llm_calls: int  # calls beyond one per unique domain
    lost_per_kill: list[int]  # calls of each killed worker asked again by another worker
    unexplained_repeats: list[LLMCall]  # repeated calls no kill accounts for
    jobs_finished_on_redelivery: int
    job_errors: int  # jobs whose handling raised (message left for redelivery), in every worker's log
    seconds: float

    def show(self) -> None:
        print(f"chaos[{self.backend}]: jobs={self.jobs} job_domains={self.job_domains}"
              f" unique_domains={self.unique_domains} kills={self.kills} lost_jobs={self.lost_jobs}"
              f" unfinished_domains={self.unfinished_domains} duplicate_answer_rows={self.duplicate_answer_rows}"
              f" llm_calls={self.llm_calls} extra_llm_calls={self.extra_llm_calls}"
              f" (bound kills x LLM_CONCURRENCY = {self.kills * LLM_CONCURRENCY})"
              f" lost_per_kill={self.lost_per_kill} unexplained_repeats={len(self.unexplained_repeats)}"
              f" jobs_finished_on_redelivery={self.jobs_finished_on_redelivery} job_errors={self.job_errors}"
              f" seconds={self.seconds:.1f}")


def trace_repeats(calls: list[LLMCall], kills: dict[str, float]) -> tuple[dict[str, list[LLMCall]], list[LLMCall]]:
    """Every call that was followed by another call for the same domain, attributed: (calls lost
    with each killed worker, calls whose repetition no kill explains). A call was lost with its
    worker when that worker was killed after making it and before the domain was asked again."""
    by_domain: dict[str, list[LLMCall]] = defaultdict(list)
    for call in sorted(calls, key=lambda c: c.at):
        by_domain[call.domain].append(call)
    lost: dict[str, list[LLMCall]] = {worker: [] for worker in kills}
    unexplained: list[LLMCall] = []
    for series in by_domain.values():
        for earlier, again in zip(series, series[1:]):
            if earlier.worker in kills and earlier.at <= kills[earlier.worker] <= again.at:
                lost[earlier.worker].append(earlier)
            else:
                unexplained.append(earlier)
    return lost, unexplained


def chaos(stack: Stack, *, backend: str, jobs: int, domains_per_job: int, workers: int, kills: int,
          timeout: float) -> Figures:
    """Run `jobs` jobs on `workers` workers, kill -9 a random busy worker `kills` times at random
    points of the run (starting a replacement each time), wait for every job, and check."""
    seed = int(os.environ.get("FIRMSIFT_CHAOS_SEED", time.time_ns() % 1_000_000))
    print(f"\nchaos[{backend}] seed={seed}")
    rng = random.Random(seed)
    started = time.monotonic()
    for _ in range(workers):
        stack.start_worker()
    job_ids, domains = submit_all(stack.base, jobs, domains_per_job)

    def answered() -> int:
        return stack.query("SELECT count(*) FROM answers")[0][0]

    killed_at: dict[str, float] = {}
    for point in sorted(rng.uniform(0.05, 0.8) for _ in range(kills)):
        wait_until(lambda: answered() >= point * len(domains), timeout, f"stalled before {point:.0%} answered")
        time.sleep(rng.uniform(0, 0.4))
        alive = {key: w for key, w in stack.workers.items() if w.running}
        victim = rng.choice(sorted(key for key, w in alive.items() if busy(w)) or sorted(alive))
        stack.workers[victim].kill()
        killed_at[victim] = time.time()
        stack.start_worker()

    def finished() -> bool:
        return stack.query("SELECT count(*) FROM jobs WHERE status IN ('DONE', 'FAILED')")[0][0] == jobs

    wait_until(finished, timeout, "not every job finished after the kills", interval=0.5)
    seconds = time.monotonic() - started
    survivors = [key for key, worker in stack.workers.items() if key not in killed_at]
    assert all(stack.workers[key].running for key in survivors), "a worker that was not killed exited"

    statuses = Counter(dict(stack.query("SELECT status, count(*) FROM jobs GROUP BY status")))
    rows, done_rows = stack.query(
        "SELECT count(*), sum(CASE WHEN status = 'DONE' THEN 1 ELSE 0 END) FROM job_domains")[0]
    answer_rows = stack.query("SELECT count(*) FROM answers")[0][0]
    distinct = stack.query("SELECT count(*) FROM (SELECT DISTINCT domain, classifier FROM answers) AS d")[0][0]
    calls = stack.llm.recorded()
    per_domain = Counter(call.domain for call in calls)
    lost, unexplained = trace_repeats(calls, killed_at)
    log_lines = [line for worker in stack.workers.values() for line in worker.log().splitlines()]
    redelivered = sum(1 for line in log_lines
                      if '"job finished"' in line and json.loads(line).get("receive_count", 1) > 1)
    job_errors = [line for line in log_lines if "job failed; message left for redelivery" in line]
    figures = Figures(
        backend=backend, jobs=jobs, job_domains=rows, unique_domains=len(domains), kills=len(killed_at),
        lost_jobs=jobs - statuses["DONE"], unfinished_domains=rows - (done_rows or 0),
        duplicate_answer_rows=answer_rows - distinct, llm_calls=len(calls), extra_llm_calls=len(calls) - len(domains),
        lost_per_kill=[len(lost[worker]) for worker in killed_at], unexplained_repeats=unexplained,
        jobs_finished_on_redelivery=redelivered, job_errors=len(job_errors), seconds=seconds,
    )
    figures.show()
    for line in job_errors[:3]:
        print("  job error:", line[:2000])
    for worker, at in killed_at.items():
        print(f"  {worker} killed; lost calls started "
              f"{sorted(round(at - call.at, 2) for call in lost[worker])} s before the kill")

    assert statuses == {"DONE": jobs}, statuses
    assert rows == jobs * domains_per_job and figures.unfinished_domains == 0
    # One cached answer per (domain, classifier), every one of them a success.
    assert figures.duplicate_answer_rows == 0 and answer_rows == len(domains)
    assert {row[0] for row in stack.query("SELECT domain FROM answers WHERE status = 'DONE'")} == domains
    # Every domain was asked, and asked again only when a killed worker took its call down with it.
    assert set(per_domain) == domains
    assert unexplained == [], f"repeated LLM calls no kill explains: {unexplained}"
    # The bound: a worker holds at most LLM_CONCURRENCY (= WORKER_JOBS x DOMAIN_CONCURRENCY)
    # domains asked and not yet stored, so a kill costs at most that many repeated calls, and the
    # calls beyond one per unique domain are at most kills x LLM_CONCURRENCY.
    assert max(figures.lost_per_kill, default=0) <= LLM_CONCURRENCY, figures.lost_per_kill
    assert 0 <= figures.extra_llm_calls <= len(killed_at) * LLM_CONCURRENCY, per_domain.most_common(10)
    # Every message was acknowledged; none was dead-lettered.
    wait_until(lambda: stack.queue_counts() == (0, 0), 3 * VISIBILITY_TIMEOUT + 10,
               f"messages left on (work, dead-letter) queues: {stack.queue_counts()}")
    return figures


@pytest.mark.long(55)
def test_kill_9_chaos_on_the_embedded_default(embedded: Stack) -> None:
    """100 jobs x 4 domains on 3 workers sharing one SQLite file; 5 random kill -9s."""
    chaos(embedded, backend="sqlite", jobs=100, domains_per_job=4, workers=3, kills=5, timeout=120)


@pytest.mark.long(55)
def test_kill_9_chaos_on_postgresql_and_sqs(production: Stack) -> None:
    """50 jobs x 4 domains on 3 workers on PostgreSQL and SQS; 3 random kill -9s."""
    chaos(production, backend="postgresql+sqs", jobs=50, domains_per_job=4, workers=3, kills=3, timeout=120)


POISON = "poison-pill.com"


@pytest.fixture(params=["sqlite", "postgresql+sqs"])
def poison_stack(request: pytest.FixtureRequest, tmp_path: Path,
                 fakes: tuple[RecordingLLM, FakeSearchServer]) -> Iterator[Stack]:
    # One job at a time per worker, so a kill takes down the poison job and nothing else.
    if request.param == "sqlite":
        yield from embedded_stack(tmp_path, *fakes, FIRMSIFT_MAX_RECEIVES="2", FIRMSIFT_WORKER_JOBS="1")
    else:
        yield from production_stack(tmp_path, *fakes, max_receives=2, FIRMSIFT_WORKER_JOBS="1")


def test_a_job_that_kills_its_worker_is_dead_lettered_and_marked_failed(poison_stack: Stack) -> None:
    """Each time a worker asks the LLM about the poison job's domain, the worker is killed -9.
    With FIRMSIFT_MAX_RECEIVES=2 the message is dead-lettered on its third receive, the next
    worker's dead-letter watcher drains it into a FAILED job, `firmsift dlq list` shows that job,
    and the jobs around it finish normally."""
    stack = poison_stack
    picked = threading.Event()
    gates: list[threading.Event] = [threading.Event()]

    def on_call(call: LLMCall) -> None:
        if call.domain == POISON:
            gate = gates[-1]
            picked.set()
            gate.wait(30)  # no answer before the worker is dead

    stack.llm.on_call = on_call
    _key, worker = stack.start_worker()
    with httpx.Client(base_url=stack.base, timeout=30) as http:
        def submit(domains: list[str]) -> str:
            response = http.post("/domains/classify", json={"domains": domains})
            assert response.status_code == 202, response.text
            return response.json()["job_id"]

        others = [submit([f"before{j}-a.com", f"before{j}-b.com"]) for j in range(4)]
        poison = submit([POISON])
        others += [submit([f"after{j}-a.com", f"after{j}-b.com"]) for j in range(4)]

        kills = 0
        for _ in range(2):  # the two receives FIRMSIFT_MAX_RECEIVES allows
            assert picked.wait(60), "no worker picked the poison job up"
            picked.clear()
            worker.kill()
            kills += 1
            gates[-1].set()
            gates.append(threading.Event())
            _key, worker = stack.start_worker()

        def ended(job_id: str) -> dict[str, Any] | None:
            document = http.get(f"/domains/classify/{job_id}").json()
            return document if document["status"] in ("DONE", "FAILED") else None

        dead = wait_until(lambda: ended(poison), 60, "the poison job was never marked FAILED")
        survivors = [wait_until(lambda j=j: ended(j), 60, f"job {j} did not finish") for j in others]

    listing = run_cli(stack.processes.env, "dlq", "list")
    listed = [json.loads(line) for line in listing.stdout.splitlines() if line.strip()]
    error = stack.query(f"SELECT error FROM jobs WHERE id = '{poison}'")[0][0]
    calls = Counter(call.domain for call in stack.llm.recorded())
    print(f"\npoison: kills={kills} poison job {dead['status']} ({error}); LLM asked about it {calls[POISON]} times;"
          f" dlq list: {listed}; other jobs: {Counter(d['status'] for d in survivors)}")

    assert dead["status"] == "FAILED" and "dead-letter" in error
    assert calls[POISON] == 2  # once per receive, never a third time
    assert listing.returncode == 0, listing.stderr
    assert [entry["job_id"] for entry in listed] == [poison]
    # The jobs around it are untouched: done, each domain asked once.
    assert [d["status"] for d in survivors] == ["DONE"] * len(others)
    assert all(r["status"] == "DONE" for d in survivors for r in d["results"])
    assert all(count == 1 for domain, count in calls.items() if domain != POISON), calls
    assert worker.running
    # Both queues are empty: the dead letter was drained into the FAILED job, which is what an
    # operator redrives (`firmsift dlq redrive`).
    wait_until(lambda: stack.queue_counts() == (0, 0), 15,
               f"messages left on (work, dead-letter) queues: {stack.queue_counts()}")
