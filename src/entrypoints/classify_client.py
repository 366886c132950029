"""`firmsift classify`: stream rows to a running API in jobs of the allowed size and write each row back,
in input order, as soon as its answer is in; only a bounded window of rows and jobs is held."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from firmsift.entrypoints.classify_rows import Row

TERMINAL = frozenset({"DONE", "FAILED"})
RECENT_ANSWERS = 10_000  # answers kept for domains repeated further down the file


class ClientError(RuntimeError):
    """The API could not be reached or refused a request in a way that retrying will not fix."""


class RowWriter(Protocol):
    def write(self, row: Row) -> None: ...


@dataclass
class Tally:
    """Rows written so far, by outcome."""

    answered: int = 0
    failed: int = 0
    rejected: int = 0

    @property
    def rows(self) -> int:
        return self.answered + self.failed + self.rejected

    def count(self, row: Row) -> None:
        if row.status == "DONE":
            self.answered += 1
        elif row.domain is None:
            self.rejected += 1
        else:
            self.failed += 1


class JobsApi:
    """The two calls of the API the client needs, with retries on overload and dropped connections."""

    def __init__(self, client: httpx.Client, classifier: str, attempts: int = 6) -> None:
        self.client, self.classifier, self.attempts = client, classifier, attempts

    def submit(self, domains: list[str]) -> tuple[str | None, dict[str, str]]:
        """(job id, {domain: reason} of the domains the API refused); the rest are resubmitted."""
        refused: dict[str, str] = {}
        while domains:
            response = self._request("POST", "/domains/classify", json={"classifier": self.classifier,
                                                                        "domains": domains})
            if response.status_code == 202:
                return str(response.json()["job_id"]), refused
            error = _error(response)
            details = error.get("details") or []
            if response.status_code == 422 and error.get("code") == "invalid_domains" and details:
                bad = {d: _reason(d, details) for d in domains if _reason(d, details) is not None}
                if not bad:
                    raise ClientError(f"API rejected domains it did not identify: {error.get('message')}")
                refused.update({d: r for d, r in bad.items() if r is not None})
                domains = [d for d in domains if d not in bad]
                continue
            if response.status_code == 413 and error.get("code") == "too_many_domains" and details:
                limit = max(len(domains) - len(details), 1)
                raise ClientError(f"the API takes at most {limit} domains a job: pass --batch-size {limit}")
            raise ClientError(f"API refused the job ({response.status_code}): "
                              f"{error.get('message', response.text[:200])}")
        return None, refused

    def job(self, job_id: str) -> dict[str, Any]:
        response = self._request("GET", f"/domains/classify/{job_id}")
        if response.status_code != 200:
            raise ClientError(f"polling job {job_id} failed ({response.status_code}): {response.text[:200]}")
        return dict(response.json())

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        for attempt in range(self.attempts):
            last = attempt == self.attempts - 1
            wait = min(2.0**attempt, 30.0)
            try:
                response = self.client.request(method, path, **kwargs)
            except httpx.TransportError as error:
                if last:
                    raise ClientError(f"cannot reach the API at {self.client.base_url}: {error}") from None
            else:
                if response.status_code not in (429, 502, 503, 504) or last:
                    return response
                wait = max(wait, _retry_after(response))
            time.sleep(wait)
        raise AssertionError("unreachable")


class OrderedClassifier:
    """Reads rows, submits their domains in jobs of `batch_size` (a domain once while it is pending or
    recently answered), polls the oldest jobs, and writes rows in input order as their answers arrive.
    At most `jobs_in_flight` jobs and `rows_ahead` rows are held at any time."""

    def __init__(self, api: JobsApi, writer: RowWriter, *, batch_size: int, jobs_in_flight: int = 100,
                 rows_ahead: int = 5000, poll_interval: float = 1.0, stall_timeout: float = 3600.0,
                 on_row: Callable[[Row, Tally], None] | None = None) -> None:
        self.api, self.writer = api, writer
        self.batch_size, self.jobs_in_flight, self.rows_ahead = batch_size, jobs_in_flight, rows_ahead
        self.poll_interval, self.stall_timeout = poll_interval, stall_timeout
        self.on_row = on_row or (lambda row, tally: None)
        self.tally = Tally()
        self._window: deque[Row] = deque()
        self._waiting: dict[str, list[Row]] = {}  # domain -> rows waiting for its answer
        self._batch: list[str] = []
        self._jobs: OrderedDict[str, list[str]] = OrderedDict()  # job id -> its domains, oldest first
        self._recent: OrderedDict[str, tuple[dict[str, Any], str]] = OrderedDict()

    def run(self, rows: Iterable[Row]) -> Tally:
        source = iter(rows)
        exhausted = False
        last_progress = time.monotonic()
        while True:
            while not exhausted and len(self._window) < self.rows_ahead and len(self._jobs) < self.jobs_in_flight:
                row = next(source, None)
                if row is None:
                    exhausted = True
                else:
                    self._take(row)
            if self._batch and len(self._jobs) < self.jobs_in_flight and (
                    exhausted or len(self._window) >= self.rows_ahead):
                self._submit()
            progressed = self._write_finished()
            if exhausted and not self._window:
                return self.tally
            progressed = self._poll() or progressed
            if progressed:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > self.stall_timeout:
                raise ClientError(f"gave up: nothing finished for {self.stall_timeout:.0f}s; "
                                  f"jobs still running: {', '.join(self._jobs)}")
            elif not (len(self._window) < self.rows_ahead and len(self._jobs) < self.jobs_in_flight
                      and not exhausted):
                time.sleep(self.poll_interval)

    def _take(self, row: Row) -> None:
        self._window.append(row)
        if row.domain is None:
            return
        if row.domain in self._waiting:
            self._waiting[row.domain].append(row)
        elif row.domain in self._recent:
            self._recent.move_to_end(row.domain)
            row.result, row.job_id = self._recent[row.domain]
        else:
            self._waiting[row.domain] = [row]
            self._batch.append(row.domain)
            if len(self._batch) >= self.batch_size:
                self._submit()

    def _submit(self) -> None:
        batch, self._batch = self._batch, []
        job_id, refused = self.api.submit(batch)
        for domain, reason in refused.items():
            for row in self._waiting.pop(domain, []):
                row.reject(f"refused by the API: {reason}")
        if job_id is not None:
            self._jobs[job_id] = [d for d in batch if d not in refused]

    def _poll(self) -> bool:
        """GET the oldest jobs until one is still running; True if any answer arrived."""
        arrived = False
        for job_id in list(self._jobs):
            document = self.api.job(job_id)
            finished = document.get("status") in TERMINAL
            for result in document.get("results") or []:
                if result.get("status") in TERMINAL or finished:
                    arrived = self._answer(job_id, result, document) or arrived
            if not finished:
                break
            for domain in self._jobs.pop(job_id):  # a job document always lists its domains; never wait forever
                arrived = self._answer(job_id, {"domain": domain, "status": "PENDING"}, document) or arrived
        return arrived

    def _answer(self, job_id: str, result: dict[str, Any], document: dict[str, Any]) -> bool:
        domain = result.get("domain")
        rows = self._waiting.pop(str(domain), None)
        if not rows:
            return False
        if result.get("status") not in TERMINAL:  # the job ended without it (dead-lettered)
            result = dict(result, status="FAILED",
                          error=f"the job ended {document.get('status')} before this domain was answered"
                                + (f": {document['error']}" if document.get("error") else ""))
        for row in rows:
            row.result, row.job_id = result, job_id
        self._recent[str(domain)] = (result, job_id)
        if len(self._recent) > RECENT_ANSWERS:
            self._recent.popitem(last=False)
        return True

    def _write_finished(self) -> bool:
        wrote = False
        while self._window and self._window[0].finished:
            row = self._window.popleft()
            self.writer.write(row)
            self.tally.count(row)
            self.on_row(row, self.tally)
            wrote = True
        return wrote


def _reason(sent: str, details: list[dict[str, Any]]) -> str | None:
    """The API echoes long values cut short and marked with an ellipsis."""
    for item in details:
        echoed = item.get("value")
        if isinstance(echoed, str) and (sent == echoed or (echoed.endswith("…") and sent.startswith(echoed[:-1]))):
            return str(item.get("reason"))
    return None


def _retry_after(response: httpx.Response) -> float:
    try:
        return min(float(response.headers.get("retry-after", "0")), 60.0)
    except ValueError:
        return 0.0


def _error(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}
