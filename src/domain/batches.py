"""Batches: a caller's list of up to 100,000 rows for one classifier, split into ordinary jobs.

Each input row keeps its position, the caller's original values and either its normalized domain
(with the job that answers it: a duplicate points at the job of its first occurrence) or the
reason it was rejected. Rows are planned in chunks that end on a job boundary, so a store can
write them as they come and never hold the whole list twice.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import NamedTuple

from firmsift.domain.budgets import BatchPause
from firmsift.domain.economy import BatchMode
from firmsift.domain.errors import FirmsiftError, InvalidRequest, JobNotFound, TooManyDomains
from firmsift.domain.model import Job, JobStatus
from firmsift.domain.normalize import DomainRejected
from firmsift.domain.spend import Spend

# The error a cancelled batch's unstarted jobs end with (FAILED, their domains still PENDING):
# the job model's compare-and-set from PENDING is what cancelling uses, so a job a worker has
# already started is never taken back.
BATCH_CANCELLED = "cancelled: its batch was deleted before the job started"
# The error of an economy job the DELETE found waiting for the provider's batch API: its questions
# not yet sent are never sent (never paid for); one already sent is answered into the cache only.
BATCH_CANCELLED_WAITING = "cancelled: its batch was deleted while it waited for the provider's batch API"
# The error of an economy job a worker was running when the DELETE came (searching, say, before
# its questions were recorded): its domains answered so far keep their answers, the others are
# cancelled, and its questions are never recorded, so never sent.
BATCH_CANCELLED_RUNNING = "cancelled: its batch was deleted while the job ran, before its questions were sent"
CANCELLED_ERRORS = frozenset({BATCH_CANCELLED, BATCH_CANCELLED_WAITING, BATCH_CANCELLED_RUNNING})
ROWS_PER_CHUNK = 2000  # rows a store writes per step; a chunk ends where a job does (at most twice as many)
ROWS_PER_ALLOWED_DOMAIN = 10  # as a job's request may list each allowed domain ten times over


class BatchStatus(str, enum.Enum):
    RUNNING = "RUNNING"
    DONE = "DONE"
    CANCELLED = "CANCELLED"


class InputRow(NamedTuple):
    """One row as the caller sent it: its 0-based position, the CSV line it starts on (None for
    JSON), its original values as JSON text, and the value to read a domain from. (A named tuple,
    as BatchRow: a batch makes 100,000 of each, and a frozen dataclass costs several times more.)"""

    position: int
    line: int | None
    original: str
    value: object


class BatchRow(NamedTuple):
    """One planned row: its domain and job, or why it was rejected (the columns of a stored row, in order)."""

    position: int
    line: int | None
    original: str
    domain: str | None = None
    job_id: str | None = None
    rejection: str | None = None


@dataclass(frozen=True)
class BatchChunk:
    """Jobs closed since the last chunk and the rows read meanwhile (in input order)."""

    jobs: tuple[Job, ...]
    rows: tuple[BatchRow, ...]


@dataclass(frozen=True)
class Batch:
    """A batch as stored. `columns` is the CSV header (None for a JSON list); `request_hash`
    identifies the request an Idempotency-Key was first used with."""

    id: str
    classifier: str
    created_at: datetime
    owner: str = ""
    reply_queue: str | None = None
    idempotency_key: str | None = None
    request_hash: str = ""
    columns: tuple[str, ...] | None = None
    total: int = 0  # rows read
    accepted: int = 0  # unique domains to classify
    duplicates: int = 0
    rejected: int = 0
    cancelled_at: datetime | None = None
    reply_sent: bool = False
    mode: BatchMode = BatchMode.STANDARD  # economy: questions to the LLM go through the provider's batch API
    refresh: bool = False  # its domains' cached answers are asked again though fresh (`firmsift refresh`)


class BatchNotFound(JobNotFound):
    code = "batch_not_found"

    def __init__(self, batch_id: str) -> None:
        FirmsiftError.__init__(self, f"no batch with id {batch_id!r}")
        self.job_id = batch_id


class BatchCancelledAlready(FirmsiftError):
    """A cancelled batch's failed rows are not retried: the cancel said to stop."""

    code = "batch_cancelled"

    def __init__(self, batch_id: str) -> None:
        super().__init__(f"batch {batch_id} was cancelled: its failed rows are not retried; submit them as a new "
                         "batch (the cached answers are reused, nothing answered is paid again)")


class BatchKeyTaken(Exception):
    """Raised by a store asked to record a batch whose owner already used its Idempotency-Key;
    carries the earlier batch, and nothing of the new one is written."""

    def __init__(self, existing: Batch) -> None:
        super().__init__(f"idempotency key already used by batch {existing.id}")
        self.existing = existing


def max_rows(max_domains: int) -> int:
    """The most rows one batch may have: ROWS_PER_ALLOWED_DOMAIN per allowed unique domain."""
    return ROWS_PER_ALLOWED_DOMAIN * max_domains


def too_many_rows(max_domains: int) -> TooManyDomains:
    return TooManyDomains(f"more than {max_rows(max_domains)} rows in one batch "
                          f"(at most {ROWS_PER_ALLOWED_DOMAIN} per allowed unique domain); split the list")


class BatchPlan:
    """Reads rows into chunks of jobs and rows; after the chunks are consumed, `batch()` is the
    batch with its counts. TooManyDomains once more than `max_domains` unique domains, or
    ROWS_PER_ALLOWED_DOMAIN times as many rows (duplicates and rejected rows included), are read:
    the rows one request stores stay bounded."""

    def __init__(self, batch: Batch, rows: Iterable[InputRow], *, read_domain: Callable[[object], str],
                 job_size: int, max_domains: int, new_job_id: Callable[[], str],
                 rows_per_chunk: int = ROWS_PER_CHUNK) -> None:
        self._batch = batch
        self._rows = rows
        self._read_domain = read_domain
        self._job_size = job_size
        self._max_domains = max_domains
        self._new_job_id = new_job_id
        self._rows_per_chunk = rows_per_chunk
        self._job_of: dict[str, str] = {}
        self._outcomes: dict[str, str | DomainRejected] = {}  # a repeated cell is read once
        self._total = self._duplicates = self._rejected = 0
        self.job_ids: list[str] = []  # every job closed so far, in order

    def chunks(self) -> Iterator[BatchChunk]:
        jobs: list[Job] = []
        rows: list[BatchRow] = []
        open_job: list[str] = []
        open_id = self._new_job_id()
        for item in self._rows:
            self._total += 1
            if self._total > max_rows(self._max_domains):
                raise too_many_rows(self._max_domains)
            outcome = self._domain_of(item.value)
            if isinstance(outcome, DomainRejected) or outcome in self._job_of:
                if isinstance(outcome, DomainRejected):
                    self._rejected += 1
                    rows.append(BatchRow(item.position, item.line, item.original, rejection=str(outcome)))
                else:
                    self._duplicates += 1
                    rows.append(BatchRow(item.position, item.line, item.original, outcome, self._job_of[outcome]))
                # Rows that close no job (rejected, repeated) still end a chunk, at twice the size: the
                # open job closes early, so no chunk holds a whole list of them.
                if len(rows) >= 2 * self._rows_per_chunk:
                    if open_job:
                        jobs.append(self._job(open_id, open_job))
                        open_job, open_id = [], self._new_job_id()
                    yield BatchChunk(tuple(jobs), tuple(rows))
                    jobs, rows = [], []
                continue
            if len(self._job_of) >= self._max_domains:
                raise TooManyDomains(f"more than {self._max_domains} unique domains in one batch "
                                     f"(row {item.position + 1}); split the list")
            self._job_of[outcome] = open_id
            open_job.append(outcome)
            rows.append(BatchRow(item.position, item.line, item.original, outcome, open_id))
            if len(open_job) == self._job_size:
                jobs.append(self._job(open_id, open_job))
                open_job, open_id = [], self._new_job_id()
                if len(rows) >= self._rows_per_chunk:
                    yield BatchChunk(tuple(jobs), tuple(rows))
                    jobs, rows = [], []
        if not self._total:
            raise InvalidRequest("the list has no rows: send at least one domain")
        if open_job:
            jobs.append(self._job(open_id, open_job))
        if jobs or rows:
            yield BatchChunk(tuple(jobs), tuple(rows))

    def batch(self) -> Batch:
        return replace(self._batch, total=self._total, accepted=len(self._job_of), duplicates=self._duplicates,
                       rejected=self._rejected)

    def _domain_of(self, value: object) -> str | DomainRejected:
        if isinstance(value, DomainRejected):
            return value  # the row itself was refused as read (a CSV row wider than its header)
        known = self._outcomes.get(value) if isinstance(value, str) else None
        if known is not None:
            return known
        try:
            outcome: str | DomainRejected = self._read_domain(value)
        except DomainRejected as rejected:
            outcome = rejected
        if isinstance(value, str):
            self._outcomes[value] = outcome
        return outcome

    def _job(self, job_id: str, domains: list[str]) -> Job:
        self.job_ids.append(job_id)
        # No reply queue on the jobs: a batch replies once, when it ends, not once per job.
        return Job(id=job_id, classifier=self._batch.classifier, status=JobStatus.PENDING,
                   created_at=self._batch.created_at, domains=tuple(domains), owner=self._batch.owner)


@dataclass(frozen=True)
class BatchCounts:
    """Where a batch's unique domains stand, when the latest one finished, and what its jobs'
    finished results spent (spend.total_spend over them: a job's `total` rule)."""

    done: int = 0
    failed: int = 0
    pending: int = 0
    cancelled: int = 0
    by_source: dict[str, int] = field(default_factory=dict)
    last_finished_at: datetime | None = None
    spend: Spend = field(default_factory=Spend)
    pause: BatchPause | None = None  # jobs waiting on a spend limit (None: none)

    @property
    def finished(self) -> int:
        return self.done + self.failed


def domain_state(domain_status: str, job_status: JobStatus, job_error: str | None) -> str:
    """A batch domain's state from its result's status and its job's: PENDING, DONE, FAILED, or
    CANCELLED for a domain whose job the batch's DELETE stopped (before it started, or while it
    waited for the provider's batch API). A domain left
    PENDING in a job that ended otherwise (dead-lettered) failed with its job."""
    if domain_status != "PENDING":
        return domain_status
    if not job_status.finished:
        return "PENDING"
    return "CANCELLED" if job_error in CANCELLED_ERRORS else "FAILED"
