"""The queue consumer: receives {job_id} messages, processes jobs, replies, then acknowledges."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from firmsift.domain.background import alongside
from firmsift.domain.budgets import BudgetExhausted, JobPause, SpendingPaused
from firmsift.domain.clock import Clock
from firmsift.domain.errors import StaleReceipt
from firmsift.domain.model import Job
from firmsift.domain.work_messages import job_message
from firmsift.ports.infrastructure_errors import DatabaseFailure, DatabaseReadOnly
from firmsift.ports.queue import MAX_BATCH, QueueMessage, ReplyPublisher, WorkQueue
from firmsift.services.dead_letters import fail_dead_lettered, job_id_of
from firmsift.services.job_replies import reply_to_job
from firmsift.services.process import JobDependencies, process_job, save_held_answers

log = logging.getLogger(__name__)
ERROR_BACKOFF_SECONDS = (0.5, 1, 2, 5, 10)
IDLE_PAUSE_SECONDS = 0.5


@dataclass
class WorkerConfig:
    wait_time: float
    visibility_timeout: float
    max_job_seconds: float
    max_jobs: int
    shutdown_grace: float = 30.0
    dead_letter_check_interval: float = 30.0
    budget_recheck_seconds: float = 300.0  # longest pause of a job held by a spend limit before a re-check


class Worker:
    """Runs jobs concurrently (at most max_jobs), deleting a message only after its job succeeded.
    `clock` is the one the event loop waits by (time.monotonic), or a test's virtual one."""

    def __init__(self, queue: WorkQueue, replies: ReplyPublisher, deps: JobDependencies,
                 config: WorkerConfig, *, clock: Clock,
                 on_job_finished: Callable[[Job, float], None] = lambda job, seconds: None,
                 dead_letters: WorkQueue | None = None,
                 on_dead_lettered: Callable[[Job], None] = lambda job: None,
                 after_job: Callable[[Job], Awaitable[None]] | None = None) -> None:
        self.queue = queue
        self.clock = clock
        self.dead_letters = dead_letters
        self.on_dead_lettered = on_dead_lettered
        # Run after each finished job is replied to (a batch's one reply when its last job ends);
        # a failure leaves the message to be redelivered, so it runs again.
        self.after_job = after_job
        self.on_job_finished = on_job_finished
        self.last_poll = clock()  # for the liveness probe: the loop is turning
        self.replies = replies
        self.deps = deps
        self.config = config
        self._tasks: set[asyncio.Task[None]] = set()

    def seconds_since_poll(self) -> float:
        """For the liveness probe: how long ago the loop last turned."""
        return self.clock() - self.last_poll

    async def run(self, stop: asyncio.Event) -> None:
        """Receive and handle messages until `stop` is set, then let jobs in hand finish
        (up to shutdown_grace seconds; unfinished ones stay undeleted and come back). Alongside,
        answers the database would not store are saved again until it takes them; those it never
        took by the end are logged as lost, with their cost."""
        saving_stop = asyncio.Event()
        saving = asyncio.create_task(save_held_answers(self.deps, saving_stop))
        try:
            await self._receive_until(stop)
        finally:
            saving_stop.set()  # after the jobs in hand: their answers may still be held
            await saving

    async def _receive_until(self, stop: asyncio.Event) -> None:
        errors = 0
        watcher = asyncio.create_task(self.watch_dead_letters(stop)) if self.dead_letters else None
        while not stop.is_set():
            self.last_poll = self.clock()
            free = min(self.config.max_jobs - len(self._tasks), MAX_BATCH)
            if free <= 0:
                # Bounded, so the loop keeps turning (and the liveness probe stays green) while busy.
                await asyncio.wait(self._tasks, timeout=max(self.config.wait_time, 1.0),
                                   return_when=asyncio.FIRST_COMPLETED)
                continue
            try:
                # Not raced against `stop`: a receive cancelled mid-claim would strand its
                # messages until their visibility timeout. It returns within wait_time anyway.
                messages = await self.queue.receive(max_messages=free, wait_seconds=self.config.wait_time)
                errors = 0
            except Exception as error:  # noqa: BLE001 - a queue or database outage must not kill the worker
                delay = ERROR_BACKOFF_SECONDS[min(errors, len(ERROR_BACKOFF_SECONDS) - 1)]
                errors += 1
                if isinstance(error, DatabaseReadOnly):  # its message says it all: no traceback
                    log.warning("receive failed; retrying in %.1fs: %s", delay, error)
                else:
                    log.exception("receive failed; retrying in %.1fs", delay)
                await _wait_or_stop(stop, delay)
                continue
            self._spawn(messages)
            if not messages and self.config.wait_time < IDLE_PAUSE_SECONDS:
                # Short polling (wait_time 0) would otherwise spin the CPU on an empty queue.
                await _wait_or_stop(stop, IDLE_PAUSE_SECONDS)
        if watcher is not None:
            await watcher
        if self._tasks:
            _done, unfinished = await asyncio.wait(self._tasks, timeout=self.config.shutdown_grace)
            for task in unfinished:
                task.cancel()
            if unfinished:
                log.warning("%d job(s) unfinished at shutdown; their messages will be redelivered", len(unfinished))
                await asyncio.wait(unfinished)

    async def watch_dead_letters(self, stop: asyncio.Event) -> None:
        """Every so often, drain the dead-letter queue: mark each message's job FAILED, reply, and
        delete the message. The database keeps the record; `firmsift dlq redrive` retries from it."""
        assert self.dead_letters is not None
        while not stop.is_set():
            try:
                while messages := await self.dead_letters.receive(max_messages=MAX_BATCH):
                    for job in await fail_dead_lettered(messages, self.deps.jobs):
                        log.warning("job dead-lettered and marked FAILED", extra={"job_id": job.id})
                        self.on_dead_lettered(job)
                        await self._reply(job)
                        await self._after(job)
                    for message in messages:
                        await self.dead_letters.delete(message.receipt)
            except Exception:  # noqa: BLE001 - checked again next interval
                log.exception("dead-letter check failed")
            await _wait_or_stop(stop, self.config.dead_letter_check_interval)

    def _spawn(self, messages: list[QueueMessage]) -> None:
        for message in messages:
            task = asyncio.create_task(self._handle_safely(message))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _handle_safely(self, message: QueueMessage) -> None:
        try:
            await self.handle(message)
        except DatabaseReadOnly as error:  # its message says what to do: no traceback
            log.warning("job not finished; message left for redelivery: %s", error,
                        extra={"message_id": message.message_id, "receive_count": message.receive_count})
        except Exception:  # noqa: BLE001 - leave the message undeleted: it comes back after the timeout
            log.exception("job failed; message left for redelivery",
                          extra={"message_id": message.message_id, "receive_count": message.receive_count})

    async def handle(self, message: QueueMessage) -> None:
        job_id = job_id_of(message)
        if job_id is None:
            log.warning("malformed message deleted", extra={"message_id": message.message_id})
            await self._delete(message)
            return
        started = self.clock()
        try:
            async with self._heartbeat(message):
                job = await process_job(job_id, self.deps)
                if job is None:
                    log.warning("message for unknown job deleted", extra={"job_id": job_id})
                else:
                    await self._reply(job)
                    await self._after(job)
                    if job.status.finished:  # not a job left waiting for a provider batch (economy mode)
                        self.on_job_finished(job, self.clock() - started)
                    log.info("job finished", extra={"job_id": job.id, "status": job.status.value,
                                                    "receive_count": message.receive_count})
        except SpendingPaused as paused:
            # Out of the heartbeat (the exception ended it), so no beat undoes the pause.
            await self._pause(message, job_id, paused.refusal)
            return
        await self._delete(message)

    async def _pause(self, message: QueueMessage, job_id: str, refusal: BudgetExhausted) -> None:
        """Bring the message back at the reset, or after budget_recheck_seconds if sooner (so a
        raised limit takes effect), without it ever reaching the dead-letter queue's max receives.
        Every receive counts towards those, and hiding a message again does not reset its count; so
        a message on its first receive is hidden, and one received more often is replaced by a
        fresh copy (count 0; sent before the old one is deleted, so the job is never without a
        message), which the next receive finds at once and hides. A paused job thus reaches
        receive count 2 at most: pausing needs max receives of 2 or more (the default is 5)."""
        delay = min(refusal.retry_after, self.config.budget_recheck_seconds)
        log.info("job paused by a spend limit; message hidden", extra={
            "job_id": job_id, "scope": refusal.scope, "seconds": delay, "receive_count": message.receive_count})
        try:  # what GET of the job (and of its batch) says about the wait
            await self.deps.jobs.record_pause(job_id, JobPause.of(refusal, self.deps.now(), delay))
        except DatabaseFailure as error:  # the pause itself matters more than its explanation
            log.warning("the pause could not be recorded", extra={"job_id": job_id, "error": str(error)})
        try:
            if message.receive_count <= 1:
                await self.queue.change_visibility(message.receipt, delay)
                return
            await self.queue.send(job_message(job_id), group_id=job_id, dedup_id=f"{job_id}:paused:{message.message_id}")
        except StaleReceipt:
            return  # the lease lapsed: the message is already back, with whoever received it
        await self._delete(message)

    async def _reply(self, job: Job) -> None:
        await reply_to_job(job, self.replies, self.deps.jobs)

    async def _after(self, job: Job) -> None:
        if self.after_job is not None and job.status.finished:
            await self.after_job(job)

    async def _delete(self, message: QueueMessage) -> None:
        try:
            await self.queue.delete(message.receipt)
        except StaleReceipt:
            # The lease ran out and the message may be with another worker; its results are
            # already stored, so the redelivery finishes at once from the cache.
            log.warning("receipt expired before delete; message will be redelivered",
                        extra={"message_id": message.message_id})

    @contextlib.asynccontextmanager
    async def _heartbeat(self, message: QueueMessage) -> AsyncIterator[None]:
        """Keep the message hidden while its job runs, up to max_job_seconds in all."""
        timeout = self.config.visibility_timeout
        deadline = self.clock() + self.config.max_job_seconds

        async def beat() -> None:
            while True:
                await asyncio.sleep(timeout / 3)
                remaining = deadline - self.clock()
                if remaining <= 0:
                    log.warning("job exceeded max_job_seconds; its lease is no longer extended",
                                extra={"message_id": message.message_id})
                    return
                try:
                    await self.queue.change_visibility(message.receipt, min(timeout, remaining))
                except StaleReceipt:
                    return
                except Exception:  # noqa: BLE001 - a missed beat is retried on the next one
                    log.exception("visibility extension failed")

        async with alongside(beat):
            yield


async def _wait_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


