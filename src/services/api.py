"""The API's application object: what the HTTP API and the web app may do, over ports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from firmsift.domain.model import Classifier, Job
from firmsift.ports.batches import BatchIntake, BatchStore
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.ports.intake import JobIntake
from firmsift.ports.keys import ApiKeyStore
from firmsift.ports.operations import ApiMetrics, IntakeHealth, ReadinessChecks
from firmsift.ports.queue import WorkQueue
from firmsift.ports.repository import ForgetsAnswers, JobRepository, KnownCompanies
from firmsift.ports.web_sessions import WebSessions
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batches import BatchReplies
from firmsift.services.budgets import Budgets
from firmsift.services.submit import SubmitJob, Submission, find_job, submit_job


@dataclass(frozen=True)
class Api:
    """Everything the front door of `firmsift api` and `firmsift serve` is given, built by the
    wiring (wiring/http.py): the classifiers, the stores and queues it reads and writes through,
    and the use-cases over them. Jobs are submitted and found through its methods; the batch,
    answer and web routes call the services on its parts."""

    catalog: Mapping[str, Classifier]
    max_domains_per_job: int
    intake: JobIntake
    jobs: JobRepository
    api_keys: ApiKeyStore
    intake_health: IntakeHealth
    readiness: ReadinessChecks
    metrics: ApiMetrics
    batch_intake: BatchIntake
    batches: BatchStore
    batch_replies: BatchReplies
    budgets: Budgets
    estimator: BatchEstimator
    human_answers: HumanAnswerStore
    cached_answers: ForgetsAnswers
    work_queue: WorkQueue
    known: KnownCompanies
    web_sessions: WebSessions

    async def submit(self, command: SubmitJob) -> Submission:
        """The job the command asks for, handed to the intake (or the first one, for a repeated key)."""
        return await submit_job(command, catalog=self.catalog, intake=self.intake, max_domains=self.max_domains_per_job)

    async def find(self, job_id: str, owner: str) -> Job:
        """The owner's job, or JobNotFound."""
        return await find_job(job_id, owner, self.jobs)
