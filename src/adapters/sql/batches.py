"""SQLAlchemy store of batches (SQLite and PostgreSQL): the batch, its rows and which jobs it was
split into, written chunk by chunk in one transaction; progress and results read from the jobs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, Select, delete, func, select, text, update

from firmsift.adapters.sql.bulk_insert import driver_cursor, insert_rows
from firmsift.adapters.sql.deferred_questions import withdraw_waiting_jobs
from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.store import SqlStore
from firmsift.adapters.sql.store_rows import epoch_time, job_pause, shown_result_from_row
from firmsift.adapters.sql.tables import batch_jobs, batch_rows, batches, job_domains, jobs
from firmsift.domain.batch_results import NO_RESULT, RowResult, ShownResult
from firmsift.domain.batches import (
    BATCH_CANCELLED,
    BATCH_CANCELLED_RUNNING,
    Batch,
    BatchCancelledAlready,
    BatchCounts,
    BatchKeyTaken,
    BatchPlan,
    BatchRow,
    domain_state,
)
from firmsift.domain.budgets import BatchPause
from firmsift.domain.economy import BatchMode
from firmsift.domain.model import UNFINISHED_STATUSES, Job, JobStatus, ResultStatus
from firmsift.domain.spend import Spend, add_spends

# Targets the unique index ix_batches_owner_idempotency_key (owner, idempotency_key): a second
# batch with an owner's key is not written (NULL keys never conflict); a concurrent insert waits
# for the first transaction and then finds its row.
INSERT_BATCH = text("""
    INSERT INTO batches (id, classifier, owner, reply_queue, idempotency_key, request_hash, csv_header,
                         total, accepted, duplicates, rejected, created_at, reply_sent, mode, refresh)
    VALUES (:id, :classifier, :owner, :reply_queue, :idempotency_key, :request_hash, :csv_header,
            0, 0, 0, 0, :created_at, FALSE, :mode, :refresh)
    ON CONFLICT (owner, idempotency_key) DO NOTHING
""")
BATCH_ROW_COLUMNS = ("batch_id", *BatchRow._fields)  # position, line, original, domain, job_id, rejection
# A page of a batch's rows picked first (by the primary key, in order), then each joined to its
# domain's result (by the unique index on job_id, domain) and its job: only the page is joined,
# whatever the planner guesses of a batch just written (PostgreSQL has no statistics yet).
_RESULT_PAGE = f"""
    SELECT {", ".join(f"r.{name}" for name in BatchRow._fields)},
           {", ".join(f"d.{name}" for name in ShownResult._fields)}, d.shown, j.status, j.error
    FROM (SELECT * FROM batch_rows WHERE batch_id = ? AND position > ? ORDER BY position LIMIT ?) AS r
    LEFT JOIN job_domains AS d ON d.job_id = r.job_id AND d.domain = r.domain
    LEFT JOIN jobs AS j ON j.id = r.job_id
    ORDER BY r.position
"""
# Where a result page's columns change from the row's to its result's, then its kept line text, its job's.
_ROW_WIDTH = len(BatchRow._fields)
_SHOWN_AT = _ROW_WIDTH + len(ShownResult._fields)
# The result columns of a domain not yet answered, as pending_domain_values writes them (a batch
# job's domain has no row until its first result: the LEFT JOIN's NULLs).
_PENDING_COLUMNS = tuple({"status": ResultStatus.PENDING.value, "reason": "", "evidence": "[]"}.get(name)
                         for name in ShownResult._fields)
_STATUS_AT = _ROW_WIDTH + ShownResult._fields.index("status")
_tuple_new = tuple.__new__
_JOB_STATUSES = {status.value: status for status in JobStatus}  # a lookup per row, not an enum call
_UNFINISHED_JOB_STATUSES = frozenset(status.value for status in UNFINISHED_STATUSES)


class SqlBatches:
    """Implements BatchStore on the engine of a SqlStore (whose job rows a batch's jobs are)."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.engine: Engine = store.engine

    async def record(self, plan: BatchPlan) -> Batch:
        return await in_transaction(self.engine, lambda conn: self.record_in(conn, plan, lambda _conn, _jobs: None))

    def record_in(self, conn: Connection, plan: BatchPlan,
                  each_chunk: Callable[[Connection, tuple[Job, ...]], None]) -> Batch:
        """Write the batch, its jobs and rows in the caller's open transaction, calling `each_chunk`
        with the jobs of each chunk once they are written (the database-queue intake enqueues
        their messages there)."""
        batch = plan.batch()
        written = conn.execute(INSERT_BATCH, {
            "id": batch.id, "classifier": batch.classifier, "owner": batch.owner, "reply_queue": batch.reply_queue,
            "idempotency_key": batch.idempotency_key, "request_hash": batch.request_hash,
            "csv_header": None if batch.columns is None else json.dumps(list(batch.columns)),
            "created_at": batch.created_at.timestamp(), "mode": batch.mode.value,
            "refresh": batch.refresh,
        }).rowcount
        if written == 0:
            earlier = conn.execute(select(batches).where(
                batches.c.owner == batch.owner, batches.c.idempotency_key == batch.idempotency_key)).mappings().one()
            raise BatchKeyTaken(_batch(earlier))
        for chunk in plan.chunks():
            self.store.insert_batch_jobs_in(conn, chunk.jobs)
            each_chunk(conn, chunk.jobs)
            insert_rows(conn, batch_jobs, ("job_id", "batch_id"), [(job.id, batch.id) for job in chunk.jobs])
            insert_rows(conn, batch_rows, BATCH_ROW_COLUMNS, [(batch.id, *row) for row in chunk.rows])
        counted = plan.batch()
        conn.execute(update(batches).where(batches.c.id == batch.id).values(
            total=counted.total, accepted=counted.accepted, duplicates=counted.duplicates, rejected=counted.rejected))
        return counted

    async def get_batch(self, batch_id: str) -> Batch | None:
        def work(conn: Connection) -> Batch | None:
            row = conn.execute(select(batches).where(batches.c.id == batch_id)).mappings().first()
            return None if row is None else _batch(row)

        return await in_transaction(self.engine, work)

    async def owned_batches(self, owner: str, limit: int) -> list[Batch]:
        # The unique index on (owner, idempotency_key) finds the owner's rows.
        query = select(batches).where(batches.c.owner == owner).order_by(batches.c.created_at.desc()).limit(limit)
        return await in_transaction(self.engine, lambda conn: [_batch(r) for r in conn.execute(query).mappings()])

    async def rejected_rows(self, batch_id: str, limit: int) -> list[BatchRow]:
        query = (select(batch_rows).where(batch_rows.c.batch_id == batch_id, batch_rows.c.rejection.is_not(None))
                 .order_by(batch_rows.c.position).limit(limit))
        return await in_transaction(self.engine, lambda conn: [_row(r) for r in conn.execute(query).mappings()])

    async def widest_row(self, batch_id: str) -> int:
        query = select(func.coalesce(func.max(func.length(batch_rows.c.original)), 0)).where(
            batch_rows.c.batch_id == batch_id)
        return int(await in_transaction(self.engine, lambda conn: conn.execute(query).scalar_one()))

    async def counts(self, batch_id: str) -> BatchCounts:
        query = (
            select(job_domains.c.status, job_domains.c.source, jobs.c.status.label("job_status"), jobs.c.error,
                   func.count().label("n"), func.max(job_domains.c.finished_at).label("last"),
                   func.coalesce(func.sum(job_domains.c.tokens_in), 0).label("tokens_in"),
                   func.coalesce(func.sum(job_domains.c.tokens_out), 0).label("tokens_out"),
                   func.coalesce(func.sum(job_domains.c.cost_usd), 0.0).label("cost_usd"),
                   func.count(job_domains.c.cost_usd).label("priced"))
            .select_from(batch_jobs.join(jobs, jobs.c.id == batch_jobs.c.job_id)
                         .join(job_domains, job_domains.c.job_id == jobs.c.id))
            .where(batch_jobs.c.batch_id == batch_id)
            .group_by(job_domains.c.status, job_domains.c.source, jobs.c.status, jobs.c.error)
        )
        groups, unwritten, pause = await in_transaction(self.engine, lambda conn: (
            conn.execute(query).mappings().all(), conn.execute(_unwritten_query(batch_id)).all(),
            _pause_in(conn, batch_id)))
        tally = {"DONE": 0, "FAILED": 0, "PENDING": 0, "CANCELLED": 0}
        by_source: dict[str, int] = {}
        last: float | None = None
        spent: list[Spend] = []
        for group in groups:
            state = domain_state(group["status"], JobStatus(group["job_status"]), group["error"])
            tally[state] += group["n"]
            if group["source"] and state in ("DONE", "FAILED"):
                by_source[group["source"]] = by_source.get(group["source"], 0) + group["n"]
            if group["last"] is not None:
                last = group["last"] if last is None else max(last, group["last"])
            if group["status"] != ResultStatus.PENDING.value:  # total_spend's rule: pending spent nothing
                spent.append(Spend(int(group["tokens_in"]), int(group["tokens_out"]), float(group["cost_usd"]),
                                   group["n"] - group["priced"]))
        for job_status, job_error, n in unwritten:  # domains whose row comes with their first result
            tally[domain_state(ResultStatus.PENDING.value, JobStatus(job_status), job_error)] += int(n or 0)
        return BatchCounts(done=tally["DONE"], failed=tally["FAILED"], pending=tally["PENDING"],
                           cancelled=tally["CANCELLED"], by_source=by_source,
                           last_finished_at=None if last is None else epoch_time(last), spend=add_spends(spent),
                           pause=pause)

    async def has_unfinished_jobs(self, batch_id: str) -> bool:
        unfinished = (select(batch_jobs.c.job_id).join(jobs, jobs.c.id == batch_jobs.c.job_id)
                      .where(batch_jobs.c.batch_id == batch_id,
                             jobs.c.status.in_([s.value for s in UNFINISHED_STATUSES])).limit(1))
        return await in_transaction(self.engine, lambda conn: conn.execute(unfinished).first() is not None)

    async def result_page(self, batch_id: str, *, after: int, limit: int) -> list[RowResult]:
        def work(conn: Connection) -> list[Any]:
            # The driver's own cursor: SQLAlchemy's row objects cost as much as the query.
            statement = _RESULT_PAGE.replace("?", "?" if conn.dialect.paramstyle == "qmark" else "%s")
            with driver_cursor(conn, statement) as cursor:
                cursor.execute(statement, (batch_id, after, limit))
                return cursor.fetchall()

        return [_row_result(row) for row in await in_transaction(self.engine, work)]

    async def cancel(self, batch_id: str, at: datetime) -> int:
        def work(conn: Connection) -> int:
            conn.execute(update(batches).where(batches.c.id == batch_id, batches.c.cancelled_at.is_(None))
                         .values(cancelled_at=at.timestamp()))
            batch_job_ids = select(batch_jobs.c.job_id).where(batch_jobs.c.batch_id == batch_id)
            # Compare-and-set on each job's status: one a worker has moved to RUNNING is left alone.
            unstarted = conn.execute(
                update(jobs).where(jobs.c.id.in_(batch_job_ids), jobs.c.status == JobStatus.PENDING.value)
                .values(status=JobStatus.FAILED.value, error=BATCH_CANCELLED, updated_at=time.time())
            ).rowcount
            withdrawn = withdraw_waiting_jobs(conn, batch_job_ids)
            mode = conn.execute(select(batches.c.mode).where(batches.c.id == batch_id)).scalar()
            if mode != BatchMode.ECONOMY.value:
                return unstarted + withdrawn
            # Economy mode: a job a worker runs has only cheap paths and searches left before its
            # questions wait, and those are refused from now on (SqlDeferredQuestions.defer): it
            # ends now, its domains answered so far kept.
            running = conn.execute(
                update(jobs).where(jobs.c.id.in_(batch_job_ids), jobs.c.status == JobStatus.RUNNING.value)
                .values(status=JobStatus.FAILED.value, error=BATCH_CANCELLED_RUNNING, updated_at=time.time())
            ).rowcount
            return unstarted + withdrawn + running

        return await in_transaction(self.engine, work)

    async def reopen_failed(self, batch_id: str) -> list[str]:
        def work(conn: Connection) -> list[str]:
            # Locked (PostgreSQL) and read here, so a cancel cannot slip in between check and reopen.
            cancelled = conn.execute(select(batches.c.cancelled_at).where(batches.c.id == batch_id)
                                     .with_for_update()).scalar()
            if cancelled is not None:
                raise BatchCancelledAlready(batch_id)
            in_batch = select(batch_jobs.c.job_id).where(batch_jobs.c.batch_id == batch_id)
            finished = jobs.c.id.in_(in_batch) & jobs.c.status.in_([JobStatus.DONE.value, JobStatus.FAILED.value])
            retried_rows = job_domains.c.job_id.in_(in_batch) & _UNBILLED_FAILURE
            with_failed_domain = select(job_domains.c.job_id).where(retried_rows)
            failed_whole = (jobs.c.status == JobStatus.FAILED.value) & (func.coalesce(jobs.c.error, "") != BATCH_CANCELLED)
            reopened = list(conn.execute(select(jobs.c.id).where(
                finished, jobs.c.id.in_(with_failed_domain) | failed_whole).order_by(jobs.c.id)).scalars())
            if not reopened:
                return []
            rows = job_domains.c.job_id.in_(reopened) & _UNBILLED_FAILURE
            # A batch job's domain has a job_domains row once it has an answer (migration 0017): a
            # failed one without its row is pending again. A job from before 0017 lists its domains
            # only in its rows: those are made PENDING rows again instead.
            listed = select(jobs.c.id).where(jobs.c.id.in_(reopened), jobs.c.batch_domains.is_not(None))
            conn.execute(delete(job_domains).where(rows, job_domains.c.job_id.in_(listed)))
            conn.execute(update(job_domains).where(rows).values(
                {**{name: None for name in _RESULT_COLUMNS}, "status": ResultStatus.PENDING.value, "reason": "",
                 "evidence": "[]"}))
            conn.execute(update(jobs).where(jobs.c.id.in_(reopened)).values(
                status=JobStatus.PENDING.value, error=None, reply_sent=False, reply_error=None, updated_at=time.time()))
            conn.execute(update(batches).where(batches.c.id == batch_id).values(reply_sent=False))
            return reopened

        return await in_transaction(self.engine, work)

    async def fail_unqueued(self, job_ids: list[str], error: str) -> None:
        await in_transaction(self.engine, lambda conn: conn.execute(
            update(jobs).where(jobs.c.id.in_(job_ids), jobs.c.status == JobStatus.PENDING.value)
            .values(status=JobStatus.FAILED.value, error=error, updated_at=time.time())))

    async def batch_of_job(self, job_id: str) -> Batch | None:
        def work(conn: Connection) -> Batch | None:
            row = conn.execute(select(batches).join(batch_jobs, batch_jobs.c.batch_id == batches.c.id)
                               .where(batch_jobs.c.job_id == job_id)).mappings().first()
            return None if row is None else _batch(row)

        return await in_transaction(self.engine, work)

    async def record_reply(self, batch_id: str) -> None:
        await in_transaction(self.engine, lambda conn: conn.execute(
            update(batches).where(batches.c.id == batch_id).values(reply_sent=True)))


# A failed row is retried only when its call was not billed (a timeout, a provider error): deleting
# a billed one (an answer that could not be read) would drop its tokens and cost from the spend
# ledger and the batch's spend, which add up these rows.
_UNBILLED_FAILURE = ((job_domains.c.status == ResultStatus.FAILED.value) & job_domains.c.tokens_in.is_(None)
                     & job_domains.c.tokens_out.is_(None) & job_domains.c.cost_usd.is_(None))
_RESULT_COLUMNS = tuple(name for name in job_domains.c.keys() if name not in ("job_id", "position", "domain"))


def _unwritten_query(batch_id: str) -> Select[Any]:
    """(job status, job error, domains) of the batch's jobs whose listed domains have no
    job_domains row yet (migration 17), grouped by the job's status and error."""
    listed = (func.length(jobs.c.batch_domains) - func.length(func.replace(jobs.c.batch_domains, "\n", "")) + 1)
    written = select(func.count()).select_from(job_domains).where(job_domains.c.job_id == jobs.c.id).scalar_subquery()
    return (select(jobs.c.status, jobs.c.error, func.sum(listed - written))
            .select_from(batch_jobs.join(jobs, jobs.c.id == batch_jobs.c.job_id))
            .where(batch_jobs.c.batch_id == batch_id, jobs.c.batch_domains.is_not(None))
            .group_by(jobs.c.status, jobs.c.error))


def _pause_in(conn: Connection, batch_id: str) -> BatchPause | None:
    """The batch's PENDING jobs a spend limit paused: the latest pause and how many."""
    paused = (select(jobs).join(batch_jobs, batch_jobs.c.job_id == jobs.c.id)
              .where(batch_jobs.c.batch_id == batch_id, jobs.c.status == JobStatus.PENDING.value,
                     jobs.c.paused_at.is_not(None)))
    latest = conn.execute(paused.order_by(jobs.c.paused_at.desc()).limit(1)).mappings().first()
    if latest is None:
        return None
    count = conn.execute(select(func.count()).select_from(paused.subquery())).scalar_one()
    pause = job_pause(latest)
    assert pause is not None  # paused_at is set
    return BatchPause(pause, count)


def _row_result(columns: Any) -> RowResult:
    # A named tuple made by tuple.__new__: its own __new__ is a Python function, a call per row.
    row: BatchRow = _tuple_new(BatchRow, columns[:_ROW_WIDTH])
    if row.job_id is None or row.domain is None:
        return RowResult(row)
    shown, job_status, job_error = columns[_SHOWN_AT:]
    status = columns[_STATUS_AT]  # NULL only where no row joined: job_domains.status is NOT NULL
    if shown is not None:
        # A DONE result saved with its line's text (migration 18): decoded only if asked for.
        state = domain_state(status, _JOB_STATUSES[job_status], job_error)
        return RowResult(row, state, None, job_error, shown)
    if status is None or (status == ResultStatus.PENDING.value and columns[_ROW_WIDTH:_SHOWN_AT] == _PENDING_COLUMNS):
        # Most rows of a running batch: no answer yet, shown by one shared NO_RESULT (which the
        # lines write fastest), PENDING while its job has not ended.
        state = "PENDING" if job_status in _UNFINISHED_JOB_STATUSES else domain_state(
            ResultStatus.PENDING.value, _JOB_STATUSES[job_status], job_error)
        return RowResult(row, state, NO_RESULT, job_error)
    result = shown_result_from_row(columns[_ROW_WIDTH:_SHOWN_AT])
    return RowResult(row, domain_state(result.status, _JOB_STATUSES[job_status], job_error), result, job_error)


def _row(row: Any) -> BatchRow:
    return BatchRow(position=row["position"], line=row["line"], original=row["original"], domain=row["domain"],
                    job_id=row["job_id"], rejection=row["rejection"])


def _batch(row: Any) -> Batch:
    return Batch(
        id=row["id"], classifier=row["classifier"], created_at=epoch_time(row["created_at"]), owner=row["owner"],
        reply_queue=row["reply_queue"], idempotency_key=row["idempotency_key"], request_hash=row["request_hash"],
        columns=None if row["csv_header"] is None else tuple(json.loads(row["csv_header"])),
        total=row["total"], accepted=row["accepted"], duplicates=row["duplicates"], rejected=row["rejected"],
        cancelled_at=None if row["cancelled_at"] is None else epoch_time(row["cancelled_at"]),
        reply_sent=bool(row["reply_sent"]), mode=BatchMode(row["mode"]),
        refresh=bool(row["refresh"]),
    )
