"""`firmsift classify`: submit domains to a running API in jobs of the allowed size, wait, collect results."""

from __future__ import annotations

import csv
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

TERMINAL = frozenset({"DONE", "FAILED"})
RESULT_COLUMNS = ("domain", "status", "answer", "confidence", "reason", "source", "evidence", "error", "job_id")


class ClientError(RuntimeError):
    """The API could not be reached or refused a request in a way that retrying will not fix."""


@dataclass
class ClassifyRun:
    results: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)

    @property
    def all_answered(self) -> bool:
        return not self.rejected and all(r["status"] == "DONE" for r in self.results)


def read_domain_column(path: Path, column: str) -> list[str]:
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if column not in (reader.fieldnames or []):
                raise ClientError(f"{path}: no column {column!r} (found: {', '.join(reader.fieldnames or [])})")
            return [row[column] for row in reader if (row.get(column) or "").strip()]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ClientError(f"{path}: cannot read: {error}") from None


class ClassifyClient:
    def __init__(self, client: httpx.Client, *, classifier: str, batch_size: int, poll_interval: float = 1.0,
                 timeout: float = 3600.0, progress: Callable[[int, int], None] | None = None) -> None:
        self.client = client
        self.classifier = classifier
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.progress = progress or (lambda done, total: None)

    def run(self, domains: list[str]) -> ClassifyRun:
        run = ClassifyRun()
        job_ids: list[str] = []
        for start in range(0, len(domains), self.batch_size):
            job_id = self._submit(domains[start : start + self.batch_size], run)
            if job_id:
                job_ids.append(job_id)
        run.results = self._wait(job_ids)
        return run

    def _submit(self, batch: list[str], run: ClassifyRun) -> str | None:
        """Submit one batch; values the API rejects are recorded and the rest resubmitted."""
        while batch:
            response = self._request("POST", "/domains/classify", json={"classifier": self.classifier, "domains": batch})
            if response.status_code == 202:
                return str(response.json()["job_id"])
            error = _error(response)
            details = error.get("details") or []
            if response.status_code == 422 and error.get("code") == "invalid_domains" and details:
                remaining = [d for d in batch if not any(_same_value(d, item.get("value")) for item in details)]
                if len(remaining) == len(batch):
                    raise ClientError(f"API rejected domains it did not identify: {error.get('message')}")
                run.rejected.extend({"domain": d, "status": "REJECTED", "error": _reason(d, details)}
                                    for d in batch if d not in remaining)
                batch = remaining
                continue
            raise ClientError(f"API refused the job ({response.status_code}): {error.get('message', response.text[:200])}")
        return None

    def _wait(self, job_ids: list[str]) -> list[dict[str, Any]]:
        documents: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + self.timeout
        while True:
            for job_id in job_ids:
                if documents.get(job_id, {}).get("status") not in TERMINAL:
                    response = self._request("GET", f"/domains/classify/{job_id}")
                    if response.status_code != 200:
                        raise ClientError(f"polling job {job_id} failed ({response.status_code}): {response.text[:200]}")
                    documents[job_id] = response.json()
            results = [dict(r, job_id=j) for j in job_ids for r in documents[j]["results"]]
            self.progress(sum(r["status"] != "PENDING" for r in results), len(results))
            if all(documents[j]["status"] in TERMINAL for j in job_ids):
                return results
            if time.monotonic() > deadline:
                raise ClientError(f"gave up waiting after {self.timeout:.0f}s; jobs: {', '.join(job_ids)}")
            time.sleep(self.poll_interval)

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        for attempt in range(5):
            try:
                response = self.client.request(method, path, **kwargs)
            except httpx.TransportError as error:
                if attempt == 4:
                    raise ClientError(f"cannot reach the API at {self.client.base_url}: {error}") from None
            else:
                if response.status_code not in (429, 502, 503, 504) or attempt == 4:
                    return response
            time.sleep(min(2**attempt, 10))
        raise AssertionError("unreachable")


def _same_value(sent: str, echoed: object) -> bool:
    """The API echoes long values cut short and marked with an ellipsis."""
    if not isinstance(echoed, str):
        return False
    return sent == echoed or (echoed.endswith("…") and sent.startswith(echoed[:-1]))


def _reason(sent: str, details: list[dict[str, Any]]) -> str:
    return next(str(item.get("reason")) for item in details if _same_value(sent, item.get("value")))


def _error(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def write_results(rows: Iterable[dict[str, Any]], out: TextIO, fmt: str) -> None:
    rows = list(rows)
    if fmt == "json":
        json.dump(rows, out, indent=2)
        out.write("\n")
        return
    writer = csv.DictWriter(out, fieldnames=RESULT_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        flat = dict(row)
        flat["evidence"] = " ".join(e["url"] for e in row.get("evidence") or [])
        writer.writerow(flat)


class ProgressLine:
    """Progress on stderr: rewritten in place on a terminal, one line per change otherwise."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.last: tuple[int, int] | None = None

    def __call__(self, done: int, total: int) -> None:
        if (done, total) == self.last:
            return
        self.last = (done, total)
        end = "\n" if done == total or not self.stream.isatty() else ""
        prefix = "\r" if self.stream.isatty() else ""
        self.stream.write(f"{prefix}classified {done}/{total} domains{end}")
        self.stream.flush()
