"""`firmsift classify` in jobs (domains given as arguments, or a CSV for an API without batches): stream
rows to a running API in jobs of the allowed size and write each row back, in input order, as soon as
its answer is in; only a bounded window of rows and jobs is held. Also the run's Tally, which the batch
path keeps too."""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from firmsift.entrypoints.cli.classify_rows import Row
from firmsift.entrypoints.cli.server_warnings import ServerWarnings
from firmsift.ports.jobs_api import ClientError, JobsApi

TERMINAL = frozenset({"DONE", "FAILED"})
RECENT_ANSWERS = 10_000  # answers kept for domains repeated further down the file


class RowWriter(Protocol):
    def write(self, row: Row) -> None: ...


@dataclass
class Tally:
    """Rows written so far, by outcome; and what the jobs spent on the LLM, each domain's answer
    counted once however many rows repeat it (the API's per-result `cost_usd`)."""

    answered: int = 0
    failed: int = 0
    rejected: int = 0
    cost_usd: float = 0.0
    cost_unknown: int = 0  # finished domains whose cost the API does not know

    @property
    def rows(self) -> int:
        return self.answered + self.failed + self.rejected

    def spend(self, result: dict[str, Any]) -> None:
        cost = result.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.cost_usd += cost
        else:
            self.cost_unknown += 1

    def count(self, row: Row) -> None:
        if row.status == "DONE":
            self.answered += 1
        elif row.domain is None:
            self.rejected += 1
        else:
            self.failed += 1


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
        self.warnings = ServerWarnings()  # what the API warns of (no worker can run), said once
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
            self.warnings.see(document)
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
        if result.get("status") in TERMINAL:
            self.tally.spend(result)
        else:  # the job ended without it (dead-lettered): no result, so no spend recorded
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
