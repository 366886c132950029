"""In-memory repository: jobs, cached answers and known companies in dicts (tests, teaching)."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable
from dataclasses import replace
from datetime import datetime

from firmsift.domain.budgets import JobPause
from firmsift.domain.estimates import LATENCY_SAMPLES, LatencyHistory, TokenHistory
from firmsift.domain.evidence_use import evidence_origin, may_lend_evidence
from firmsift.domain.idempotency import IdempotencyKeyTaken
from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, KnownCompany, Source
from firmsift.domain.outside_text import check_storable
from firmsift.domain.spend import Spend, total_spend
from firmsift.domain.spend_reservations import SpendReservation


class InMemoryStore:
    """Implements JobRepository, AnswerStore, AnswerHistory, KnownCompanies and SpendLedger."""

    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}
        self.answers: dict[tuple[str, str], Answer] = {}
        self.companies: dict[str, KnownCompany] = {}
        self.finished_at: dict[tuple[str, str], float] = {}  # (job id, domain) -> epoch seconds, as SQL stores it
        self.reservations: dict[str, SpendReservation] = {}

    async def create_job(self, job: Job) -> None:
        if job.id in self.jobs:
            raise ValueError(f"job {job.id} exists")
        if job.idempotency_key is not None:
            for earlier in self.jobs.values():
                if (earlier.owner, earlier.idempotency_key) == (job.owner, job.idempotency_key):
                    raise IdempotencyKeyTaken(earlier)
        self._store_new(job)

    async def create_jobs(self, jobs: Collection[Job]) -> None:
        if any(job.idempotency_key is not None for job in jobs):
            raise ValueError("create_jobs stores jobs without an idempotency key; use create_job")
        if any(job.id in self.jobs for job in jobs):
            raise ValueError("a job exists already")  # checked first: none is stored then
        for job in jobs:
            self._store_new(job)

    def _store_new(self, job: Job) -> None:
        self.jobs[job.id] = replace(job, results=tuple(DomainResult(domain=d) for d in job.domains))

    async def get_job(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    async def release_idempotency_key(self, job_id: str) -> None:
        self.jobs[job_id] = replace(self.jobs[job_id], idempotency_key=None)

    async def set_job_status(self, job_id: str, status: JobStatus, error: str | None = None, *,
                             only_from: Collection[JobStatus] | None = None) -> bool:
        job = self.jobs[job_id]
        if only_from is not None and job.status not in only_from:
            return False
        self.jobs[job_id] = replace(job, status=status, error=error, pause=None)
        return True

    async def record_pause(self, job_id: str, pause: JobPause) -> None:
        job = self.jobs.get(job_id)
        if job is not None and job.status is JobStatus.PENDING:
            self.jobs[job_id] = replace(job, pause=pause)

    async def save_result(self, job_id: str, result: DomainResult, answer: Answer | None) -> bool:
        check_storable(result, answer)  # refuse what the SQL stores refuse
        if answer is not None:
            self.answers[(answer.domain, answer.classifier)] = answer
        job = self.jobs.get(job_id)
        if job is None or job.status.finished:
            return False
        self.jobs[job_id] = replace(job, results=tuple(result if r.domain == result.domain else r for r in job.results))
        self.finished_at[(job_id, result.domain)] = time.time()
        return True

    async def spend_between(self, start: datetime, end: datetime, owner: str | None = None) -> Spend:
        return total_spend(
            result for job in self.jobs.values() if owner is None or job.owner == owner for result in job.results
            if start.timestamp() <= self.finished_at.get((job.id, result.domain), -1.0) < end.timestamp())

    async def reserve(self, reservation: SpendReservation, now: datetime, start: datetime, end: datetime,
                      key_limit: float | None, global_limit: float | None) -> tuple[str, float] | None:
        self.reservations = {k: r for k, r in self.reservations.items() if r.expires_at > now}
        for scope, limit, owner in (("key", key_limit, reservation.owner), ("global", global_limit, None)):
            if limit is None or (scope == "key" and not owner):
                continue
            held = sum(r.amount_usd for r in self.reservations.values() if owner is None or r.owner == owner)
            total = round((await self.spend_between(start, end, owner)).cost_usd + held, 12)  # as the SQL stores
            if total >= limit:
                return scope, total
        self.reservations[reservation.id] = reservation
        return None

    async def release(self, reservation_id: str) -> None:
        self.reservations.pop(reservation_id, None)

    async def record_reply(self, job_id: str, *, sent: bool, error: str | None) -> None:
        self.jobs[job_id] = replace(self.jobs[job_id], reply_sent=sent, reply_error=error)

    async def list_failed_jobs(self, *, error: str, limit: int) -> list[Job]:
        failed = [j for j in self.jobs.values() if j.status is JobStatus.FAILED and j.error == error]
        return sorted(failed, key=lambda j: j.created_at)[:limit]

    async def get_answers(self, domains: Iterable[str], classifier: str) -> dict[str, Answer]:
        found = (self.answers.get((domain, classifier)) for domain in domains)
        return {answer.domain: answer for answer in found if answer is not None}

    async def token_history(self, classifier: str) -> TokenHistory:
        counted = [(a.tokens_in, a.tokens_out) for (_, name), a in self.answers.items() if name == classifier
                   and a.source is Source.LLM and a.tokens_in is not None and a.tokens_out is not None]
        if not counted:
            return TokenHistory()
        return TokenHistory(len(counted), sum(i for i, _ in counted) / len(counted),
                            sum(o for _, o in counted) / len(counted))

    async def latency_history(self, classifier: str) -> LatencyHistory:
        timed = sorted((a for (_, name), a in self.answers.items() if name == classifier
                        and a.source is Source.LLM and a.llm_seconds is not None),
                       key=lambda a: a.answered_at, reverse=True)[:LATENCY_SAMPLES]
        if not timed:
            return LatencyHistory()
        return LatencyHistory(len(timed), sum(a.llm_seconds or 0.0 for a in timed) / len(timed),
                              sum(a.evidence_seconds or 0.0 for a in timed) / len(timed))

    async def forget_answers(self, classifier: str, domains: Collection[str] | None, *, only_precheck: bool) -> int:
        wanted = None if domains is None else set(domains)
        gone = [key for key, answer in self.answers.items() if key[1] == classifier
                and (wanted is None or key[0] in wanted) and (not only_precheck or answer.source is Source.PRECHECK)]
        for key in gone:
            del self.answers[key]
        return len(gone)

    async def recent_evidence(self, domain: str, classifier: str, since: datetime) -> Answer | None:
        lenders = [answer for (stored_domain, _), answer in self.answers.items()
                   if stored_domain == domain and may_lend_evidence(answer, to=classifier, since=since)]
        # Latest search first; between equals, the classifier first by name (as the SQL store orders).
        return min(lenders, key=lambda a: (-evidence_origin(a)[1].timestamp(), a.classifier), default=None)

    async def find_known(self, domains: Iterable[str]) -> dict[str, KnownCompany]:
        return {d: self.companies[d] for d in domains if d in self.companies}

    async def upsert_known(self, companies: Iterable[KnownCompany]) -> int:
        count = 0
        for company in companies:
            self.companies[company.domain] = company
            count += 1
        return count
