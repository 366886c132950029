"""The wiring of the queues: the work queue and its dead-letter queue on the database or SQS, the
intakes that write a job (or a batch) with its message, the replies, and readiness."""

from __future__ import annotations

from dependency_injector import providers

from firmsift.adapters.readiness import IntakeOutcomes, Readiness
from firmsift.adapters.sql.batch_intake import SqlBatchIntake
from firmsift.adapters.sql.job_intake import SqlJobIntake
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.queue_sending import SqlReplyPublisher
from firmsift.entrypoints.wiring.lazy_adapters import ensure_declared_queues, make_sqs_queue, make_sqs_replies, open_sqs_client
from firmsift.entrypoints.wiring.storage import StorageWiring
from firmsift.services.batch_intake import RecordBatchThenPublish
from firmsift.services.batches import BatchReplies
from firmsift.services.submit import RecordThenPublish


class QueueWiring(StorageWiring):
    """The queues, on the database (`FIRMSIFT_QUEUE_BACKEND=db`) or SQS (`sqs`). The SQS client is
    a Resource, closed by `container.shutdown_resources()`."""

    settings, engine, store, batches = (
        StorageWiring.settings, StorageWiring.engine, StorageWiring.store, StorageWiring.batches)
    backend = settings.provided.queue_backend

    # The database queue (SQLite or PostgreSQL): the embedded default, and production without SQS.
    db_queue = providers.Singleton(
        SqlQueue, engine, settings.provided.queue_name,
        visibility_timeout=settings.provided.visibility_timeout,
        max_receives=settings.provided.max_receives,
        dead_letter_queue=settings.provided.dead_letter_queue,
        poll_interval=settings.provided.poll_interval,
    )
    db_dead_letter_queue = providers.Singleton(
        SqlQueue, engine, settings.provided.dead_letter_queue,
        visibility_timeout=settings.provided.visibility_timeout, max_receives=None,
        poll_interval=settings.provided.poll_interval,
    )
    # Amazon SQS (or an emulator at sqs_endpoint_url); the dead-letter queue and max receives
    # are the queue's redrive policy, declared in deploy/queues.toml.
    sqs_client = providers.Resource(open_sqs_client, settings)
    sqs_queue = providers.Singleton(make_sqs_queue, sqs_client, settings.provided.work_queue,
                                    settings.provided.visibility_timeout)

    work_queue = providers.Selector(backend, db=db_queue, sqs=sqs_queue)
    declared_queues = providers.Callable(ensure_declared_queues, sqs_client, settings)
    intake = providers.Selector(
        backend,
        # The job row and its message in one transaction: no publish gap on the database queue.
        db=providers.Singleton(SqlJobIntake, engine, store, db_queue),
        # Row first, then the message; a failed publish marks the job FAILED (503 to the caller).
        sqs=providers.Singleton(RecordThenPublish, store, sqs_queue),
    )
    # Workers drain the dead-letter queue: each message's job becomes FAILED and is replied to.
    dead_letters = providers.Selector(
        backend,
        db=db_dead_letter_queue,
        sqs=providers.Singleton(make_sqs_queue, sqs_client, settings.provided.dead_letter_queue,
                                settings.provided.visibility_timeout),
    )
    replies = providers.Selector(
        backend,
        db=providers.Singleton(SqlReplyPublisher, engine),
        sqs=providers.Singleton(make_sqs_replies, sqs_client),
    )
    # Reads an embedded reply queue: call with the queue name. No dead-letter queue for replies.
    reply_reader = providers.Factory(
        SqlQueue, engine, visibility_timeout=settings.provided.visibility_timeout, max_receives=None,
        poll_interval=settings.provided.poll_interval,
    )
    # Batches: split into jobs written (with their messages, on the database queue) in one
    # transaction; a batch replies once, when it ends, from the worker that finished it.
    batch_intake = providers.Selector(
        backend,
        db=providers.Singleton(SqlBatchIntake, engine, batches, db_queue),
        sqs=providers.Singleton(RecordBatchThenPublish, batches, store, sqs_queue),
    )
    batch_replies = providers.Singleton(BatchReplies, batches, replies)
    intake_outcomes = providers.Singleton(IntakeOutcomes)  # the API's latest intake result, for /readyz
    readiness = providers.Singleton(Readiness, engine, work_queue, intake_outcomes)
