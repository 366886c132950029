"""Fault injection with real processes: the real LiteLLM adapter in `firmsift worker` processes
against an OpenAI-compatible server that misbehaves per domain: unreadable answers, HTTP 500 for
a while, 429 with Retry-After, and a call that never returns.

What must hold whatever the retry policy: no job stuck, no worker crash, failures confined to
their domain, the whole run bounded in time. What needs retries (a 500 or a 429 that clears
ends DONE) is a separate test, expected to fail until retries are wired into the worker."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_llm_server import Decision, requested_domain, scripted_answer
from tests.support.fake_search_server import FakeSearchServer
from tests.support.processes import Process, Processes, start_api, start_worker_process, wait_until, worker_probe

pytestmark = pytest.mark.e2e

LLM_TIMEOUT = 2  # seconds; the hanging call must end as a timeout, not hold its job
FAILING_CALLS = 2  # a "flaky" domain gets this many 500s, then answers
RETRY_AFTER = 2  # seconds a "ratelimited" domain's 429 asks to wait, once
GARBAGE = "Well, it's hard to say. They make things, I think. Not JSON, sorry."
RUN_BOUND = 60  # seconds after which a job not ended is stuck: a hang, not a speed goal


@dataclass
class Call:
    at: float
    status: int | None  # None: never answered (the hanging call)


@dataclass
class FaultyLLM:
    """An OpenAI-compatible chat-completions server, in the test process, whose behaviour depends
    on the domain asked about (the word in its name): `garbage` gets prose, `flaky` gets HTTP 500
    for its first FAILING_CALLS calls, `ratelimited` gets one 429 with Retry-After, `hang` is never
    answered; any other domain gets a well-formed answer. Every call is recorded per domain."""

    calls: dict[str, list[Call]] = field(default_factory=lambda: defaultdict(list))
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def decide(self, body: Any) -> tuple[int, dict[str, Any], dict[str, str]] | None:
        """(status, JSON body, extra headers), or None to hang."""
        domain = requested_domain(body) or ""
        with self.lock:
            earlier = len(self.calls[domain])
            self.calls[domain].append(Call(time.monotonic(), None))
        if "hang" in domain:
            return None
        if "flaky" in domain and earlier < FAILING_CALLS:
            return 500, {"error": {"message": "upstream overloaded", "type": "server_error", "code": 500}}, {}
        if "ratelimited" in domain and earlier == 0:
            return 429, {"error": {"message": "rate limit reached", "type": "rate_limit_error", "code": 429}}, {
                "Retry-After": str(RETRY_AFTER)}
        content = GARBAGE if "garbage" in domain else json.dumps(scripted_answer(body, Decision()))
        return 200, completion(content), {}

    def answered(self, body: Any, status: int) -> None:
        domain = requested_domain(body) or ""
        with self.lock:
            self.calls[domain][-1].status = status

    def per_domain(self) -> dict[str, list[Call]]:
        with self.lock:
            return {domain: list(calls) for domain, calls in self.calls.items()}


def completion(content: str) -> dict[str, Any]:
    return {"id": "chatcmpl-faulty", "object": "chat.completion", "created": int(time.time()), "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}


def serve(llm: FaultyLLM) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = {}
            decision = llm.decide(body)
            if decision is None:
                llm.stopping.wait()  # the caller's timeout ends this; the server's stop releases the thread
                return
            status, document, headers = decision
            payload = json.dumps(document).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                return
            llm.answered(body, status)
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="faulty-llm", daemon=True).start()
    return server


@dataclass
class Stack:
    processes: Processes
    base: str
    llm: FaultyLLM
    db: Path
    workers: list[tuple[Process, str]]  # (process, probe base URL)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db, timeout=30) as conn:
            return conn.execute(sql, params).fetchall()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """`firmsift api` and two workers on a SQLite file, with the faulty LLM and a fake SearXNG."""
    folder = tmp_path_factory.mktemp("llm-faults")
    llm = FaultyLLM()
    server = serve(llm)
    processes = Processes(folder)
    try:
        with FakeSearchServer() as search:
            processes.env = {
                "FIRMSIFT_AUTH": "off",
                "FIRMSIFT_DATABASE_URL": f"sqlite:///{folder / 'firmsift.db'}",
                "FIRMSIFT_LLM_MODEL": "openai/fake-model",
                "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{server.server_address[1]}/v1",
                "FIRMSIFT_LLM_TIMEOUT": str(LLM_TIMEOUT),
                "FIRMSIFT_SEARCH_PROVIDER": "searxng",
                "FIRMSIFT_SEARXNG_URL": search.base_url,
                "FIRMSIFT_WAIT_TIME": "1",
                "FIRMSIFT_POLL_INTERVAL": "0.1",
                "FIRMSIFT_VISIBILITY_TIMEOUT": "3",
                "FIRMSIFT_LLM_CONCURRENCY": "4",
                "FIRMSIFT_WORKER_JOBS": "2",
                "FIRMSIFT_SHUTDOWN_GRACE_SECONDS": "2",
            }
            _api, base = start_api(processes)
            started = [start_worker_process(processes) for _ in range(2)]
            workers = [(worker, worker_probe(worker)) for worker in started]
            yield Stack(processes, base, llm, folder / "firmsift.db", workers)
    finally:
        llm.stopping.set()
        processes.kill_all()
        server.shutdown()
        server.server_close()


def run_jobs(stack: Stack, jobs: list[list[str]]) -> tuple[list[dict[str, Any]], float]:
    """Submit the jobs, wait (at most RUN_BOUND seconds) until each has ended; (documents, seconds)."""
    started = time.monotonic()
    with httpx.Client(base_url=stack.base, timeout=30) as http:
        ids = []
        for domains in jobs:
            response = http.post("/domains/classify", json={"domains": domains})
            assert response.status_code == 202, response.text
            ids.append(response.json()["job_id"])

        def documents() -> list[dict[str, Any]] | None:
            found = [http.get(f"/domains/classify/{job_id}").json() for job_id in ids]
            return found if all(d["status"] in ("DONE", "FAILED") for d in found) else None

        ended = wait_until(documents, RUN_BOUND, "a job is stuck: not ended within the bound", interval=0.5)
    return ended, time.monotonic() - started


def json_lines(log: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.splitlines() if line.startswith("{")]


def results(documents: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["domain"]: r for d in documents for r in d["results"]}


def assert_workers_alive(stack: Stack) -> None:
    for worker, probe in stack.workers:
        assert worker.running, f"a worker died:\n{worker.log()[-3000:]}"
        assert httpx.get(f"{probe}/healthz", timeout=5).status_code == 200
        # LLM faults are per-domain outcomes: never an exception out of a job (which would leave
        # its message to come back and try everything again).
        assert "job failed; message left for redelivery" not in worker.log(), worker.log()[-3000:]


def test_llm_faults_fail_only_their_domain_and_no_job_is_stuck(stack: Stack) -> None:
    jobs = [
        ["good1-a.com", "good1-b.com", "garbage1.com"],
        ["good2-a.com", "garbage2.com", "good2-b.com"],
        ["good3-a.com", "flaky3.com"],
        ["good4-a.com", "ratelimited4.com"],
        ["good5-a.com", "hang5.com", "good5-b.com"],
        ["garbage6.com", "hang6.com"],  # nothing can be answered: the job itself FAILED
    ]
    documents, seconds = run_jobs(stack, jobs)
    by_domain = results(documents)
    calls = stack.llm.per_domain()
    print(f"\nllm-faults: {len(jobs)} jobs ended in {seconds:.1f}s; "
          + "; ".join(f"{d}={r['status']}" + (f" ({(r['error'] or '')[:70]})" if r["error"] else "")
                      + f" calls={len(calls.get(d, []))}" for d, r in sorted(by_domain.items())
                      if not d.startswith("good")))

    # Failures stay with their domain: every job with an answerable domain is DONE.
    assert [d["status"] for d in documents] == ["DONE"] * 5 + ["FAILED"]
    for domain, result in by_domain.items():
        if domain.startswith("good"):
            assert result["status"] == "DONE" and result["source"] == "llm", result
    # Unreadable output: FAILED, and the raw answer kept for debugging.
    for domain in ("garbage1.com", "garbage2.com", "garbage6.com"):
        assert by_domain[domain]["status"] == "FAILED"
        assert "unreadable model output" in by_domain[domain]["error"]
        raw = stack.query("SELECT status, raw_output FROM answers WHERE domain = ?", domain)
        assert raw == [("FAILED", GARBAGE)]
    # A call that never returns ends as a timeout of that domain, not a stuck job.
    for domain in ("hang5.com", "hang6.com"):
        assert by_domain[domain]["status"] == "FAILED"
        assert "timed out" in by_domain[domain]["error"] or "timeout" in by_domain[domain]["error"].lower()
    # Transient errors end either way, as the retry policy allows; a failure says what happened.
    assert by_domain["flaky3.com"]["status"] in ("DONE", "FAILED")
    if by_domain["flaky3.com"]["status"] == "FAILED":
        assert "500" in by_domain["flaky3.com"]["error"]
    assert by_domain["ratelimited4.com"]["status"] in ("DONE", "FAILED")
    if by_domain["ratelimited4.com"]["status"] == "FAILED":
        assert "rate limited" in by_domain["ratelimited4.com"]["error"]
    # FAILED answers are not cached: the failing domains are stored as FAILED, the others DONE.
    assert stack.query("SELECT count(*) FROM answers WHERE domain LIKE 'good%' AND status <> 'DONE'") == [(0,)]
    assert_workers_alive(stack)
    # Every message was acknowledged: nothing left to be redelivered.
    wait_until(lambda: stack.query("SELECT count(*) FROM queue_messages WHERE queue LIKE 'firmsift-jobs%'")
               == [(0,)], 15, "messages left on the work queue")


def test_transient_llm_errors_end_done_once_retries_are_wired(stack: Stack) -> None:
    """A 500 that clears after FAILING_CALLS calls, and a 429 whose Retry-After is honoured,
    both end DONE; the wait the worker chose before retrying the 429 is no shorter than
    Retry-After asked (as its log says: the worker's clock is its own)."""
    logged_before = {worker.name: len(worker.log()) for worker, _ in stack.workers}  # the stack is the module's
    documents, seconds = run_jobs(stack, [["good7-a.com", "flaky7.com"], ["good8-a.com", "ratelimited8.com"]])
    by_domain = results(documents)
    calls = stack.llm.per_domain()
    print(f"\nllm-retries: ended in {seconds:.1f}s; flaky7 {by_domain['flaky7.com']['status']} after "
          f"{len(calls['flaky7.com'])} calls; ratelimited8 {by_domain['ratelimited8.com']['status']} after "
          f"{len(calls['ratelimited8.com'])} calls")
    assert_workers_alive(stack)
    assert by_domain["flaky7.com"]["status"] == "DONE", by_domain["flaky7.com"]
    assert len(calls["flaky7.com"]) == FAILING_CALLS + 1
    assert by_domain["ratelimited8.com"]["status"] == "DONE", by_domain["ratelimited8.com"]
    assert len(calls["ratelimited8.com"]) == 2
    retries = [line for worker, _ in stack.workers for line in json_lines(worker.log()[logged_before[worker.name]:])
               if line["message"] == "provider call failed, trying again" and line.get("cause") == "rate limited"]
    assert [line["retry_in"] >= RETRY_AFTER for line in retries] == [True], retries  # Retry-After is a floor
    assert [d["status"] for d in documents] == ["DONE", "DONE"]
