"""The job intake for the database queue: a job's rows and its queue message written in one
transaction, so a job is either accepted whole or not recorded at all. Jobs accepted at the same
time share a transaction (group commit): a few statements and one commit for all of them."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.model import Job
from firmsift.domain.work_messages import job_message
from firmsift.machinery.group_commit import GroupCommit
from firmsift.ports.infrastructure_errors import QueueUnavailable

JOBS_PER_TRANSACTION = 64
# Expired dedup ids are garbage the dedup check already ignores, and a purge reads every dedup id
# of the queue (there is no index on expires_at): at hundreds of jobs a second, a purge per job
# read thousands of rows per job. Jobs' dedup ids are new job ids, so no purge is needed for them
# to be written; one a second keeps the table at the window's size.
PURGE_INTERVAL_SECONDS = 1.0


class SqlJobIntake:
    """A JobIntake for a SqlStore and a SqlQueue in the same database. Unlike an intake for a
    queue elsewhere (row first, then message), a failure here leaves nothing behind: no job
    row waits for a message that was never written, and no message points at a missing job."""

    def __init__(self, engine: Engine, store: SqlStore, queue: SqlQueue) -> None:
        # One transaction can only span both if both live on this very engine.
        if store.engine is not engine or queue.engine is not engine:
            raise ValueError("SqlJobIntake needs its store and queue on the engine it was given")
        self._engine = engine
        self._store = store
        self._queue = queue
        self._together = GroupCommit(self._write_new_jobs, most=JOBS_PER_TRANSACTION)
        self._next_purge = 0.0

    async def accept(self, job: Job) -> None:
        """Record the PENDING job and queue {"job_id": ...} (group and dedup id = job id)
        atomically; QueueUnavailable, with nothing written, if the database refuses."""
        try:
            if job.idempotency_key is None:
                await self._together.submit(job)
            else:
                # A job with a key may collide with an earlier one: written alone, so the
                # collision answers this job and no other.
                await asyncio.to_thread(self._write_keyed_job, job)
        except SQLAlchemyError as exc:
            raise QueueUnavailable(
                f"job {job.id} could not be durably accepted, nothing was recorded: "
                f"{getattr(exc, 'orig', None) or exc}"
            ) from exc
        self._queue.wake_receivers()

    def _write_keyed_job(self, job: Job) -> None:
        with self._engine.begin() as conn:
            self._store.insert_job_in(conn, job)
            self._queue.enqueue_in(conn, job_message(job.id), group_id=job.id, dedup_id=job.id)

    async def _write_new_jobs(self, jobs: list[Job]) -> None:
        await asyncio.to_thread(self._write_new_jobs_in_transaction, jobs)

    def _write_new_jobs_in_transaction(self, jobs: list[Job]) -> None:
        # Each job is new in this transaction: the first and only message of its group.
        with self._engine.begin() as conn:
            self._store.insert_jobs_in(conn, jobs)
            self._purge_now_and_then(conn)
            self._queue.enqueue_fresh_groups_in(conn, [(job_message(job.id), job.id) for job in jobs])

    def _purge_now_and_then(self, conn: Connection) -> None:
        now = time.monotonic()
        if now >= self._next_purge:
            self._queue.purge_expired_in(conn)
            # Set before the commit: a purge rolled back is only retried a second later, harmlessly.
            self._next_purge = now + PURGE_INTERVAL_SECONDS
