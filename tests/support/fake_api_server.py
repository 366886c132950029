"""A loopback stand-in for firmsift's own API (POST and GET /domains/classify), answering at once, for
client tests and the CSV streaming benchmark: what it measures is the client, not the service.

Answers are deterministic: a domain containing "bank" is no, one containing "fail" is FAILED, any
other yes. Domains are checked with firmsift's normalization, as the real API does (422 with details);
domains in `refuse` are refused too, and a job holding a domain in `hold` never finishes.
A job is answered on its second GET (the first sees it RUNNING; `--polls-to-finish` changes that), and forgotten once reported finished,
so the server holds only the jobs in flight.

As a process: `python -m tests.support.fake_api_server --port 0 [--max-domains N]` prints its port
alone on one line, then serves until terminated.
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from firmsift.domain.normalize import DomainRejected, normalize_domain
from tests.support.loopback_http import ServerThread


class FakeApi:
    def __init__(self, port: int = 0, max_domains: int = 10, host: str = "127.0.0.1", polls_to_finish: int = 2) -> None:
        self.max_domains, self.polls_to_finish = max_domains, polls_to_finish
        self.jobs: dict[str, dict[str, Any]] = {}
        self.submitted: list[list[str]] = []  # every accepted job's domains, in order (tests only)
        self.record = True
        self.refuse: set[str] = set()
        self.hold: set[str] = set()
        self.max_in_flight = 0  # the most jobs submitted and not yet reported finished at once
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._thread = ServerThread(host, port, _handler(self), "fake-api")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._thread.port}"

    def __enter__(self) -> FakeApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.stop()

    def submit(self, body: Any) -> tuple[int, dict[str, Any]]:
        domains = body.get("domains") if isinstance(body, dict) else None
        if not isinstance(domains, list) or not domains:
            return 422, {"error": {"code": "invalid_request", "message": "domains missing", "details": []}}
        normalized, details = [], []
        for value in domains:
            try:
                normalized.append(normalize_domain(value))
            except DomainRejected as rejected:
                details.append({"value": value, "reason": str(rejected)})
            if value in self.refuse:
                details.append({"value": value, "reason": "refused (scripted)"})
        if details:
            return 422, {"error": {"code": "invalid_domains", "message": f"{len(details)} invalid domain(s)",
                                   "details": details}}
        unique = list(dict.fromkeys(normalized))
        if len(unique) > self.max_domains:
            return 413, {"error": {"code": "too_many_domains", "message": "too many domains",
                                   "details": [{"value": d, "reason": "over the limit"} for d in unique[self.max_domains:]]}}
        with self._lock:
            job_id = f"job-{next(self._ids)}"
            self.jobs[job_id] = {"domains": unique, "polls": 0}
            self.max_in_flight = max(self.max_in_flight, len(self.jobs))
            if self.record:
                self.submitted.append(unique)
        return 202, {"job_id": job_id, "status": "PENDING", "classifier": "cpg", "domains": unique}

    def job(self, job_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None:
                return 404, {"error": {"code": "job_not_found", "message": "no such job", "details": []}}
            job["polls"] += 1
            done = job["polls"] >= self.polls_to_finish and not self.hold.intersection(job["domains"])
            if done:
                del self.jobs[job_id]
        results = [_result(d) if done else _pending(d) for d in job["domains"]]
        status = ("FAILED" if all(r["status"] == "FAILED" for r in results) else "DONE") if done else "RUNNING"
        return 200, {"job_id": job_id, "classifier": "cpg", "status": status, "results": results}


def _result(domain: str) -> dict[str, Any]:
    if "fail" in domain:
        return {**_pending(domain), "status": "FAILED", "error": "the provider failed (scripted)"}
    yes = "bank" not in domain
    return {"domain": domain, "status": "DONE", "answer": yes, "confidence": 4,
            "reason": "Sells packaged goods." if yes else "A bank.", "source": "llm",
            "evidence": [{"url": f"https://{domain}/", "title": domain}], "error": None,
            "cost_usd": 0.001}  # what the job spent on it; a failed domain's is unknown (null, as pending)


def _pending(domain: str) -> dict[str, Any]:
    return {"domain": domain, "status": "PENDING", "answer": None, "confidence": None, "reason": "",
            "source": None, "evidence": [], "error": None}


def _handler(api: FakeApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes: without this, Nagle's algorithm holds the body
            # until the client's delayed ACK, 40 ms a request.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                body = None
            self._send(*api.submit(body)) if self.path == "/domains/classify" else self._send(404, {})

        def do_GET(self) -> None:  # noqa: N802
            prefix = "/domains/classify/"
            self._send(*api.job(self.path[len(prefix):])) if self.path.startswith(prefix) else self._send(404, {})

        def _send(self, status: int, document: dict[str, Any]) -> None:
            payload = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-domains", type=int, default=10)
    parser.add_argument("--polls-to-finish", type=int, default=2)
    args = parser.parse_args()
    api = FakeApi(args.port, args.max_domains, polls_to_finish=args.polls_to_finish)
    api.record = False  # a long-running process must not grow
    print(api._thread.port, flush=True)
    sys.stdout.flush()
    api._thread.serve_forever()


if __name__ == "__main__":
    main()
