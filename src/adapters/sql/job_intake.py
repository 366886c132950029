"""The job intake for the database queue: a job's rows and its queue message written in one
transaction, so a job is either accepted whole or not recorded at all."""

from __future__ import annotations

import asyncio

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.errors import QueueUnavailable
from firmsift.domain.model import Job
from firmsift.domain.work_messages import job_message


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

    async def accept(self, job: Job) -> None:
        """Record the PENDING job and queue {"job_id": ...} (group and dedup id = job id)
        atomically; QueueUnavailable, with nothing written, if the database refuses."""

        def write(conn: Connection) -> None:
            self._store.insert_job_in(conn, job)
            self._queue.enqueue_in(conn, job_message(job.id), group_id=job.id, dedup_id=job.id)

        def in_transaction() -> None:
            with self._engine.begin() as conn:
                write(conn)

        try:
            await asyncio.to_thread(in_transaction)
        except SQLAlchemyError as exc:
            raise QueueUnavailable(
                f"job {job.id} could not be durably accepted, nothing was recorded: "
                f"{getattr(exc, 'orig', None) or exc}"
            ) from exc
        self._queue.wake_receivers()
