"""SQLAlchemy store of batches (SQLite and PostgreSQL): the batch, its rows and which jobs it was
split into, written chunk by chunk in one transaction; progress and results read from the jobs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, func, select, text, update

from firmsift.adapters.sql.bulk_insert import insert_rows
from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.store import SqlStore
from firmsift.adapters.sql.store_rows import domain_result, epoch_time
from firmsift.adapters.sql.tables import batch_jobs, batch_rows, batches, job_domains, jobs
from firmsift.domain.batch_results import RowResult
from firmsift.domain.batches import BATCH_CANCELLED, Batch, BatchCounts, BatchKeyTaken, BatchPlan, BatchRow, domain_state
from firmsift.domain.model import UNFINISHED_STATUSES, Job, JobStatus, ResultStatus
from firmsift.domain.spend import Spend, add_spends

# Targets the unique index ix_batches_owner_idempotency_key (owner, idempotency_key): a second
# batch with an owner's key is not written (NULL keys never conflict); a concurrent insert waits
# for the first transaction and then finds its row.
INSERT_BATCH = text("""
    INSERT INTO batches (id, classifier, owner, reply_queue, idempotency_key, request_hash, csv_header,
                         total, accepted, duplicates, rejected, created_at, reply_sent)
    VALUES (:id, :classifier, :owner, :reply_queue, :idempotency_key, :request_hash, :csv_header,
            0, 0, 0, 0, :created_at, FALSE)
    ON CONFLICT (owner, idempotency_key) DO NOTHING
""")


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
            "created_at": batch.created_at.timestamp(),
        }).rowcount
        if written == 0:
            earlier = conn.execute(select(batches).where(
                batches.c.owner == batch.owner, batches.c.idempotency_key == batch.idempotency_key)).mappings().one()
            raise BatchKeyTaken(_batch(earlier))
        for chunk in plan.chunks():
            self.store.insert_jobs_in(conn, chunk.jobs)
            each_chunk(conn, chunk.jobs)
            insert_rows(conn, batch_jobs, [{"job_id": job.id, "batch_id": batch.id} for job in chunk.jobs])
            insert_rows(conn, batch_rows, [
                {"batch_id": batch.id, "position": row.position, "line": row.line, "original": row.original,
                 "domain": row.domain, "job_id": row.job_id, "rejection": row.rejection}
                for row in chunk.rows
            ])
        counted = plan.batch()
        conn.execute(update(batches).where(batches.c.id == batch.id).values(
            total=counted.total, accepted=counted.accepted, duplicates=counted.duplicates, rejected=counted.rejected))
        return counted

    async def get_batch(self, batch_id: str) -> Batch | None:
        def work(conn: Connection) -> Batch | None:
            row = conn.execute(select(batches).where(batches.c.id == batch_id)).mappings().first()
            return None if row is None else _batch(row)

        return await in_transaction(self.engine, work)

    async def rejected_rows(self, batch_id: str) -> list[BatchRow]:
        query = (select(batch_rows).where(batch_rows.c.batch_id == batch_id, batch_rows.c.rejection.is_not(None))
                 .order_by(batch_rows.c.position))
        return await in_transaction(self.engine, lambda conn: [_row(r) for r in conn.execute(query).mappings()])

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
        groups = await in_transaction(self.engine, lambda conn: conn.execute(query).mappings().all())
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
        return BatchCounts(done=tally["DONE"], failed=tally["FAILED"], pending=tally["PENDING"],
                           cancelled=tally["CANCELLED"], by_source=by_source,
                           last_finished_at=None if last is None else epoch_time(last), spend=add_spends(spent))

    async def has_unfinished_jobs(self, batch_id: str) -> bool:
        unfinished = (select(batch_jobs.c.job_id).join(jobs, jobs.c.id == batch_jobs.c.job_id)
                      .where(batch_jobs.c.batch_id == batch_id,
                             jobs.c.status.in_([s.value for s in UNFINISHED_STATUSES])).limit(1))
        return await in_transaction(self.engine, lambda conn: conn.execute(unfinished).first() is not None)

    async def result_page(self, batch_id: str, *, after: int, limit: int) -> list[RowResult]:
        def work(conn: Connection) -> list[RowResult]:
            rows = [_row(r) for r in conn.execute(
                select(batch_rows).where(batch_rows.c.batch_id == batch_id, batch_rows.c.position > after)
                .order_by(batch_rows.c.position).limit(limit)).mappings().all()]
            job_ids = sorted({row.job_id for row in rows if row.job_id is not None})
            if not job_ids:
                return [RowResult(row) for row in rows]
            results = {(r["job_id"], r["domain"]): domain_result(r) for r in conn.execute(
                select(job_domains).where(job_domains.c.job_id.in_(job_ids))).mappings().all()}
            states = {r["id"]: (JobStatus(r["status"]), r["error"]) for r in conn.execute(
                select(jobs.c.id, jobs.c.status, jobs.c.error).where(jobs.c.id.in_(job_ids))).mappings().all()}
            return [_row_result(row, results, states) for row in rows]

        return await in_transaction(self.engine, work)

    async def cancel(self, batch_id: str, at: datetime) -> int:
        def work(conn: Connection) -> int:
            conn.execute(update(batches).where(batches.c.id == batch_id, batches.c.cancelled_at.is_(None))
                         .values(cancelled_at=at.timestamp()))
            # Compare-and-set on each job's status: one a worker has moved to RUNNING is left alone.
            return conn.execute(
                update(jobs).where(jobs.c.id.in_(select(batch_jobs.c.job_id).where(batch_jobs.c.batch_id == batch_id)),
                                   jobs.c.status == JobStatus.PENDING.value)
                .values(status=JobStatus.FAILED.value, error=BATCH_CANCELLED, updated_at=time.time())
            ).rowcount

        return await in_transaction(self.engine, work)

    async def batch_of_job(self, job_id: str) -> Batch | None:
        def work(conn: Connection) -> Batch | None:
            row = conn.execute(select(batches).join(batch_jobs, batch_jobs.c.batch_id == batches.c.id)
                               .where(batch_jobs.c.job_id == job_id)).mappings().first()
            return None if row is None else _batch(row)

        return await in_transaction(self.engine, work)

    async def record_reply(self, batch_id: str) -> None:
        await in_transaction(self.engine, lambda conn: conn.execute(
            update(batches).where(batches.c.id == batch_id).values(reply_sent=True)))


def _row_result(row: BatchRow, results: dict[tuple[str, str], Any],
                states: dict[str, tuple[JobStatus, str | None]]) -> RowResult:
    if row.job_id is None or row.domain is None:
        return RowResult(row)
    result = results[(row.job_id, row.domain)]
    job_status, job_error = states[row.job_id]
    return RowResult(row, domain_state(result.status.value, job_status, job_error), result, job_error)



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
        reply_sent=bool(row["reply_sent"]),
    )
