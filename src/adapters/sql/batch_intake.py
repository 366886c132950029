"""The batch intake for the database queue: a batch's rows, its jobs and their queue messages
written in one transaction, so a batch is either accepted whole or not recorded at all."""

from __future__ import annotations

from sqlalchemy import Connection, Engine

from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.domain.batches import Batch, BatchPlan
from firmsift.domain.model import Job
from firmsift.domain.work_messages import job_message


class SqlBatchIntake:
    """A BatchIntake for SqlBatches and a SqlQueue in the same database: each job's message is
    written right after its rows, as the plan is read, in the batch's one transaction."""

    def __init__(self, engine: Engine, batches: SqlBatches, queue: SqlQueue) -> None:
        # One transaction can only span both if both live on this very engine.
        if batches.engine is not engine or queue.engine is not engine:
            raise ValueError("SqlBatchIntake needs its batch store and queue on the engine it was given")
        self._engine = engine
        self._batches = batches
        self._queue = queue

    async def accept(self, plan: BatchPlan) -> Batch:
        def enqueue(conn: Connection, jobs: tuple[Job, ...]) -> None:
            # Each job is new in this transaction: the first and only message of its group.
            self._queue.enqueue_fresh_groups_in(conn, [(job_message(job.id), job.id) for job in jobs])

        def record(conn: Connection) -> Batch:
            self._queue.purge_expired_in(conn)  # once for the batch, not once per chunk of its jobs
            return self._batches.record_in(conn, plan, enqueue)

        # A database failure leaves as DatabaseFailure (a 503), with nothing recorded.
        batch = await in_transaction(self._engine, record)
        self._queue.wake_receivers()
        return batch
