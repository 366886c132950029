"""The producer use-case: validate a classification request, record the job, then publish it."""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.clock import utc_now
from firmsift.domain.errors import (
    InvalidRequest,
    JobNotFound,
    Rejection,
    TooManyDomains,
    UnknownClassifier,
)
from firmsift.domain.idempotency import IdempotencyKeyTaken, check_idempotency_key, replay
from firmsift.domain.keys import ANONYMOUS, Caller
from firmsift.domain.model import Classifier, Job, JobStatus
from firmsift.domain.normalize import DomainList
from firmsift.domain.reply_queues import check_reply_queue, check_reply_queue_allowed
from firmsift.domain.work_messages import OutgoingMessage, job_message
from firmsift.machinery.group_commit import GroupCommit
from firmsift.machinery.job_ids import TimeOrderedIds
from firmsift.ports.infrastructure_errors import QueuePartlySent, QueueUnavailable

if TYPE_CHECKING:
    from firmsift.ports.intake import JobIntake
    from firmsift.ports.queue import WorkQueue
    from firmsift.ports.repository import JobRepository
log = logging.getLogger(__name__)
# A request may list each allowed domain this many times over (duplicates, spellings of one name):
# more entries than that are refused unread, so the work one request can ask for stays bounded.
ENTRIES_PER_ALLOWED_DOMAIN = 10
JOBS_PER_GROUP = 64  # jobs without a key recorded and published together, at most


@dataclass(frozen=True)
class SubmitJob:
    """A request to classify some domains; fields are raw caller input, checked by submit_job."""

    classifier: object
    domains: object
    reply_queue: str | None = None
    caller: Caller = ANONYMOUS
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Submission:
    """The job a submission stands for; `replayed` when it is an earlier job returned again
    for a repeated Idempotency-Key, rather than a job created now."""

    job: Job
    replayed: bool = False


# A job's (and a batch's) id: time-ordered, so a batch's jobs are appended to the indexes keyed by id.
new_job_id = TimeOrderedIds()


def parse_job_id(raw: str) -> str:
    """The canonical job id, or JobNotFound for anything that cannot be one of ours."""
    try:
        parsed = uuid.UUID(raw)
    except (ValueError, AttributeError, TypeError):
        raise JobNotFound(raw) from None
    if str(parsed) != raw.lower():
        raise JobNotFound(raw)
    return str(parsed)


async def submit_job(
    command: SubmitJob,
    *,
    catalog: Mapping[str, Classifier],
    intake: JobIntake,
    max_domains: int,
    new_id: Callable[[], str] = new_job_id,
    now: Callable[[], datetime] = utc_now,
) -> Submission:
    """Check and normalize the request, then hand the PENDING job to the intake (row, then message).
    A repeated Idempotency-Key of the same caller returns the job the first request created."""
    reply_queue = check_reply_queue(command.reply_queue)
    check_reply_queue_allowed(reply_queue, command.caller.reply_queues)
    idempotency_key = check_idempotency_key(command.idempotency_key)
    classifier = _check_classifier(command.classifier, catalog)
    domains = await _check_domains(command.domains, max_domains)
    job = Job(
        id=new_id(),
        classifier=classifier.name,
        status=JobStatus.PENDING,
        created_at=now(),
        domains=tuple(domains),
        reply_queue=reply_queue,
        owner=command.caller.owner,
        idempotency_key=idempotency_key,
    )
    try:
        await intake.accept(job)
    except IdempotencyKeyTaken as taken:
        return Submission(replay(job, taken.existing), replayed=True)
    return Submission(job)


async def find_job(job_id: str, owner: str, jobs: JobRepository) -> Job:
    """The caller's job, or JobNotFound: another owner's job is not found either, so a caller
    cannot learn that someone else's job exists."""
    canonical = parse_job_id(job_id)
    job = await jobs.get_job(canonical)
    if job is None or job.owner != owner:
        raise JobNotFound(job_id)
    return job


class RecordThenPublish:
    """The intake for a queue outside the database (SQS): write the row first, so a message never
    points at a missing job, then publish. If publishing fails the job is marked FAILED with the
    reason and QueueUnavailable is raised: the caller gets a 503 and no job waits forever.
    Jobs without an Idempotency-Key accepted at the same time are recorded in one transaction
    and published in one batch call (per 10 messages on SQS) instead of one of each per job."""

    def __init__(self, jobs: JobRepository, queue: WorkQueue) -> None:
        self.jobs = jobs
        self.queue = queue
        self._together = GroupCommit(self._record_then_publish, most=JOBS_PER_GROUP)

    async def accept(self, job: Job) -> None:
        if job.idempotency_key is None:
            await self._together.submit(job)
            return
        # A job with a key may collide with an earlier one: recorded alone, so the collision
        # answers this job and no other.
        await self.jobs.create_job(job)
        try:
            await self.queue.send(job_message(job.id), group_id=job.id, dedup_id=job.id)
        except (QueueUnavailable, asyncio.CancelledError) as error:
            # Also when the caller's deadline cancels a publish stuck in a partition: the job must
            # not stay PENDING. (Such a publish may still land; the worker then finds the job
            # FAILED and drops the message.) Shielded, so the cancellation cannot cut this short.
            await asyncio.shield(self._give_up(job, error))
            raise

    async def _record_then_publish(self, jobs: list[Job]) -> list[BaseException | None] | None:
        await self.jobs.create_jobs(jobs)  # a failure here fails every job of the group, none recorded
        messages = [OutgoingMessage(job_message(job.id), group_id=job.id, dedup_id=job.id) for job in jobs]
        try:
            await self.queue.send_many(messages)
        except (QueueUnavailable, asyncio.CancelledError) as error:
            # The jobs whose messages are surely queued stand; the others are given up, as one
            # job's would be (their messages may still land: the worker drops them).
            sent = error.sent if isinstance(error, QueuePartlySent) else 0
            for job in jobs[sent:]:
                await asyncio.shield(self._give_up(job, error))
            if isinstance(error, asyncio.CancelledError):
                raise
            return [None] * sent + [error] * (len(jobs) - sent)
        return None

    async def _give_up(self, job: Job, error: BaseException) -> None:
        # The detail (queue URL, account, role) is for the operator's log, not for callers.
        log.error("job could not be queued", extra={"job_id": job.id, "error": str(error) or type(error).__name__})
        await self.jobs.set_job_status(job.id, JobStatus.FAILED, error="could not be queued; try again")
        # The caller is told to retry: its retry with the same Idempotency-Key must make a new
        # job, not get this failed one back.
        if job.idempotency_key is not None:
            await self.jobs.release_idempotency_key(job.id)


def _check_classifier(name: object, catalog: Mapping[str, Classifier]) -> Classifier:
    if not isinstance(name, str) or name not in catalog:
        raise UnknownClassifier(str(name), tuple(sorted(catalog)))
    return catalog[name]


_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def _turn() -> asyncio.Lock:
    """The running event loop's lock for costly normalization (a lock serves one loop only)."""
    return _TURNS.setdefault(asyncio.get_running_loop(), asyncio.Lock())


def max_entries(max_domains: int) -> int:
    """The most values `domains` may hold, duplicates included."""
    return ENTRIES_PER_ALLOWED_DOMAIN * max_domains


async def _check_domains(domains: object, max_domains: int) -> list[str]:
    if not isinstance(domains, list):
        raise InvalidRequest(
            "'domains' must be a list of domain names",
            (Rejection(value=domains, reason=f"is {type(domains).__name__}, not a list"),),
        )
    if not domains:
        raise InvalidRequest("'domains' is empty: give at least one domain")
    if len(domains) > max_entries(max_domains):
        raise TooManyDomains(f"{len(domains)} entries given; at most {max_entries(max_domains)} per request "
                             f"(duplicates included) for at most {max_domains} unique domains")
    normalized = DomainList()
    for value in domains:
        if normalized.costly(value):
            # One internationalized value per turn of the event loop over all requests, taken in
            # arrival order: the lock is held until the loop has turned, so with ten hostile
            # requests at once a turn still does one value's work (~0.3 ms), not ten, and every
            # request, hostile or not, gets its turns.
            async with _turn():
                normalized.add(value)
                await asyncio.sleep(0)
        else:
            normalized.add(value)
            await asyncio.sleep(0)  # hand the loop back after each value: no request holds it
    unique = normalized.unique()
    if len(unique) > max_domains:
        raise TooManyDomains(
            f"{len(unique)} unique domains given; at most {max_domains} per job",
            tuple(Rejection(value=d, reason="over the per-job limit") for d in unique[max_domains:]),
        )
    return unique
