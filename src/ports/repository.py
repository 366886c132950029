"""Repository ports: jobs and their per-domain results, cached answers, known companies."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Protocol

from firmsift.domain.budgets import JobPause
from firmsift.domain.estimates import LatencyHistory, TokenHistory
from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, KnownCompany


class JobRepository(Protocol):
    async def create_job(self, job: Job) -> None:
        """Store a new job with its domains, every domain PENDING. If the job has an
        idempotency key its owner already used, store nothing and raise IdempotencyKeyTaken
        with that earlier job (atomically: of concurrent attempts, exactly one stores a job)."""

    async def create_jobs(self, jobs: Collection[Job]) -> None:
        """Store new jobs without an idempotency key, each as create_job would: all of them or,
        when the store fails, none (one transaction)."""

    async def get_job(self, job_id: str) -> Job | None:
        """The job with its per-domain results, or None."""

    async def release_idempotency_key(self, job_id: str) -> None:
        """Forget the job's idempotency key, so a retry with that key makes a new job (used when
        the job could not be queued and its caller was told to try again)."""

    async def set_job_status(self, job_id: str, status: JobStatus, error: str | None = None, *,
                             only_from: Collection[JobStatus] | None = None) -> bool:
        """Set the job's status and error. With `only_from`, only if its status is one of those,
        decided atomically (a compare-and-set: of two racing writers one wins). True when set.
        Any status set clears the job's pause."""

    async def record_pause(self, job_id: str, pause: JobPause) -> None:
        """Note why the job waits (a spend limit), if it is PENDING: GET shows it until the job's
        status is next set."""

    async def save_result(self, job_id: str, result: DomainResult, answer: Answer | None) -> bool:
        """Record one domain's result in the job and, when given, upsert the cached answer on
        (domain, classifier), both in one transaction; True when the job's result was recorded.

        A finished job (DONE or FAILED) keeps the results its caller was told: only the answer
        is stored (it was paid for) and False is returned. Serialized with set_job_status, so no
        result lands in a job after the write that finished it. Raises UnstorableText, with
        nothing written, when a text cannot be stored (see domain.outside_text)."""

    async def record_reply(self, job_id: str, *, sent: bool, error: str | None) -> None: ...

    async def list_failed_jobs(self, *, error: str, limit: int) -> list[Job]:
        """Up to `limit` FAILED jobs whose error is exactly `error`, oldest first."""


class AnswerStore(Protocol):
    async def get_answers(self, domains: Iterable[str], classifier: str) -> dict[str, Answer]:
        """Stored answers (fresh or not, FAILED included) keyed by domain."""

    async def recent_evidence(self, domain: str, classifier: str, since: datetime) -> Answer | None:
        """The stored answer for `domain` whose evidence `classifier` may reuse instead of searching
        (evidence_use.may_lend_evidence: another classifier's, DONE by the LLM, evidence found,
        searched at or after `since`), the most recently searched one; None when there is none."""


class ForgetsAnswers(Protocol):
    async def forget_answers(self, classifier: str, domains: Collection[str] | None, *, only_precheck: bool) -> int:
        """Delete `classifier`'s cached answers for `domains` (None: all of them), only the
        pre-check's outcomes when `only_precheck`; how many were deleted. The next job asks
        again. People's corrections (human answers) are kept elsewhere and stay."""


class AnswerHistory(Protocol):
    async def token_history(self, classifier: str) -> TokenHistory:
        """How many stored LLM answers of `classifier` report both token counts, and their averages."""

    async def latency_history(self, classifier: str) -> LatencyHistory:
        """The means of the latest (by answered_at) estimates.LATENCY_SAMPLES stored LLM answers of
        `classifier` that stored their latency, and how many there were."""


class KnownCompanies(Protocol):
    async def find_known(self, domains: Iterable[str]) -> dict[str, KnownCompany]:
        """Known companies whose domain is one of `domains`, keyed by that domain."""

    async def upsert_known(self, companies: Iterable[KnownCompany]) -> int:
        """Insert or update companies by domain; returns how many rows were written."""
