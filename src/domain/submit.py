"""The producer use-case: validate a classification request, record the job, then publish it."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from firmsift.domain.errors import (
    InvalidRequest,
    JobNotFound,
    QueueUnavailable,
    Rejection,
    TooManyDomains,
    UnknownClassifier,
)
from firmsift.domain.model import Classifier, Job, JobStatus
from firmsift.domain.normalize import normalize_domains

if TYPE_CHECKING:
    from firmsift.ports.intake import JobIntake
    from firmsift.ports.queue import WorkQueue
    from firmsift.ports.repository import JobRepository

# Queue names as SQS allows them (80 characters, letters, digits, - and _, optional .fifo),
# or a full https queue URL for the SQS backend.
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,75}(\.fifo)?$")
_QUEUE_URL = re.compile(r"^https?://[^\s/]+/\d{12}/[A-Za-z0-9_-]{1,75}(\.fifo)?$")


@dataclass(frozen=True)
class SubmitJob:
    """A request to classify some domains; fields are raw caller input, checked by submit_job."""

    classifier: object
    domains: object
    reply_queue: str | None = None


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def new_job_id() -> str:
    return str(uuid.uuid4())


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
) -> Job:
    """Check and normalize the request, then hand the PENDING job to the intake (row, then message)."""
    classifier = _check_classifier(command.classifier, catalog)
    domains = _check_domains(command.domains, max_domains)
    reply_queue = _check_reply_queue(command.reply_queue)
    job = Job(
        id=new_id(),
        classifier=classifier.name,
        status=JobStatus.PENDING,
        created_at=now(),
        domains=tuple(domains),
        reply_queue=reply_queue,
    )
    await intake.accept(job)
    return job


def job_message(job_id: str) -> str:
    """The work-queue message body: only the id (claim check); the domains stay in the database."""
    return json.dumps({"job_id": job_id})


class RecordThenPublish:
    """The intake for a queue outside the database (SQS): write the row first, so a message never
    points at a missing job, then publish. If publishing fails the job is marked FAILED with the
    reason and QueueUnavailable is raised: the caller gets a 503 and no job waits forever."""

    def __init__(self, jobs: JobRepository, queue: WorkQueue) -> None:
        self.jobs = jobs
        self.queue = queue

    async def accept(self, job: Job) -> None:
        await self.jobs.create_job(job)
        try:
            await self.queue.send(job_message(job.id), group_id=job.id, dedup_id=job.id)
        except QueueUnavailable as error:
            await self.jobs.set_job_status(job.id, JobStatus.FAILED, error=f"could not be queued: {error}")
            raise


def _check_classifier(name: object, catalog: Mapping[str, Classifier]) -> Classifier:
    if not isinstance(name, str) or name not in catalog:
        raise UnknownClassifier(str(name), tuple(sorted(catalog)))
    return catalog[name]


def _check_domains(domains: object, max_domains: int) -> list[str]:
    if not isinstance(domains, list):
        raise InvalidRequest(
            "'domains' must be a list of domain names",
            (Rejection(value=domains, reason=f"is {type(domains).__name__}, not a list"),),
        )
    if not domains:
        raise InvalidRequest("'domains' is empty: give at least one domain")
    unique = normalize_domains(domains)
    if len(unique) > max_domains:
        raise TooManyDomains(
            f"{len(unique)} unique domains given; at most {max_domains} per job",
            tuple(Rejection(value=d, reason="over the per-job limit") for d in unique[max_domains:]),
        )
    return unique


def _check_reply_queue(reply_queue: str | None) -> str | None:
    if reply_queue is None:
        return None
    value = reply_queue.strip()
    if _QUEUE_NAME.match(value) or _QUEUE_URL.match(value):
        return value
    raise InvalidRequest(
        "invalid X-Reply-Queue",
        (Rejection(value=reply_queue, reason="must be a queue name (letters, digits, - and _, optional .fifo) or an SQS queue URL"),),
    )
