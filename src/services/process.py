"""The consumer use-case: answer every unfinished domain of a job by the cheapest path."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from firmsift.domain.background import alongside
from firmsift.domain.budgets import BudgetExhausted, SpendingPaused
from firmsift.domain.clock import utc_now
from firmsift.domain.freshness import is_fresh
from firmsift.domain.inflight import InFlight
from firmsift.domain.known_companies import known_company, known_company_reason, with_parents
from firmsift.domain.model import (
    UNFINISHED_STATUSES,
    Answer,
    Classifier,
    DomainResult,
    Job,
    JobStatus,
    KnownCompany,
    ResultStatus,
    Source,
)
from firmsift.domain.outside_text import UnstorableText
from firmsift.services.asking import ask_llm
from firmsift.services.evidence import gather_evidence
from firmsift.services.precheck import Precheck, SiteCheck

if TYPE_CHECKING:
    from firmsift.ports.leases import AnswerLeases
    from firmsift.ports.providers import LLM, Pricing, Search
    from firmsift.ports.repository import AnswerStore, JobRepository, KnownCompanies

log = logging.getLogger(__name__)


@dataclass
class JobDependencies:
    """Everything process_job needs: the ports, the classifiers, and the worker-wide limits."""

    jobs: JobRepository
    answers: AnswerStore
    known: KnownCompanies
    search: Search
    llm: LLM
    pricing: Pricing  # what the LLM's tokens cost, recorded with each answer
    catalog: Mapping[str, Classifier]
    llm_slots: asyncio.Semaphore  # worker-wide cap on concurrent LLM calls
    domain_concurrency: int = 10
    now: Callable[[], datetime] = utc_now
    new_marker: Callable[[], str] = lambda: secrets.token_hex(12)
    inflight: InFlight[tuple[Answer, bool]] = field(default_factory=InFlight)
    on_result: Callable[[DomainResult], None] = lambda result: None  # e.g. count domains by path
    # Across workers: who is asking the LLM about a domain right now (None: this worker only).
    leases: AnswerLeases | None = None
    lease_holder: str = field(default_factory=lambda: uuid.uuid4().hex)
    lease_seconds: float = 20.0  # renewed while the call runs; a dead worker's lease lapses this soon
    lease_poll_seconds: float = 0.5
    lease_wait_seconds: float = 300.0  # longest wait for another worker's answer before asking anyway
    precheck: Precheck | None = None  # a cheap look at the domain before the LLM (None: off)
    # Why a job's owner (its API key id) may not spend now, or None; asked before each domain that
    # would need the pre-check and the LLM (None: no spend limits).
    spend_gate: Callable[[str], Awaitable[BudgetExhausted | None]] | None = None
    # Another classifier's evidence for the domain searched this recently is reused instead of
    # searching again (None: always search); each reuse is told to on_evidence_reused(classifier).
    evidence_reuse_age: timedelta | None = None
    on_evidence_reused: Callable[[str], None] = lambda classifier: None

    def is_fresh(self, answer: Answer, classifier: Classifier) -> bool:
        """Whether `answer` may be reused now; a pre-check outcome for the pre-check's max age."""
        if self.precheck is None:
            return is_fresh(answer, self.now(), classifier.prompt_version)
        return is_fresh(answer, self.now(), classifier.prompt_version, precheck_max_age=self.precheck.max_age)


async def process_job(job_id: str, deps: JobDependencies) -> Job | None:
    """Finish the job and return it, or None when no such job exists (the message is garbage).

    Domains already finished in this job (a redelivery after a crash) are skipped; the others
    run concurrently, bounded by domain_concurrency. A provider failure fails only its domain.
    A domain that would cost money while a spend limit is reached is left PENDING; once the
    others are done the job is PENDING again and SpendingPaused is raised (nothing fails).
    """
    job = await deps.jobs.get_job(job_id)
    if job is None:
        return None
    if job.status.finished:
        return job
    classifier = deps.catalog.get(job.classifier)
    if classifier is None:
        await deps.jobs.set_job_status(job.id, JobStatus.FAILED, error=f"classifier {job.classifier!r} is not configured",
                                       only_from=UNFINISHED_STATUSES)
        return await deps.jobs.get_job(job.id)
    if not await deps.jobs.set_job_status(job.id, JobStatus.RUNNING, only_from=UNFINISHED_STATUSES):
        return await deps.jobs.get_job(job.id)  # finished since we looked (dead-lettered meanwhile)
    pending = [d for d in job.domains if job.result_for(d).status is ResultStatus.PENDING]
    known = await deps.known.find_known(with_parents(pending)) if classifier.uses_known_companies else {}
    cached = await deps.answers.get_answers(pending, classifier.name)
    slots = asyncio.Semaphore(deps.domain_concurrency)
    refusals: list[BudgetExhausted] = []

    async def run(domain: str) -> None:
        async with slots:
            try:
                result, answer = await _answer_domain(domain, classifier, known, cached.get(domain), deps, job.owner)
            except SpendingPaused as paused:
                refusals.append(paused.refusal)  # caught here: the TaskGroup must not cancel paid calls
                return
            result = await _save(job.id, result, answer, deps)
            if answer is not None and deps.leases is not None:
                # Only now that the answer is stored (or refused) may another worker look for it.
                await deps.leases.release(domain, classifier.name, deps.lease_holder)
            deps.on_result(result)
            log.info("domain answered", extra={"job_id": job.id, "domain": domain, "status": result.status.value,
                                               "source": result.source.value if result.source else None,
                                               "error": result.error})

    # A TaskGroup, not gather: if one domain's save fails (a database blip), its siblings are
    # cancelled instead of running on detached while the message comes back to another worker.
    async with asyncio.TaskGroup() as group:
        for domain in pending:
            group.create_task(run(domain))
    if refusals:
        await deps.jobs.set_job_status(job.id, JobStatus.PENDING, only_from=(JobStatus.RUNNING,))
        log.info("job paused by a spend limit", extra={"job_id": job.id, "paused_domains": len(refusals)})
        raise SpendingPaused(refusals[-1])
    finished = await deps.jobs.get_job(job.id)
    assert finished is not None
    all_failed = all(r.status is ResultStatus.FAILED for r in finished.results)
    # Only from RUNNING: a job failed by dead-lettering while this (late) delivery ran stays as
    # its caller was told; a redriven one (PENDING again) is finished by its new delivery.
    await deps.jobs.set_job_status(job.id, JobStatus.FAILED if all_failed else JobStatus.DONE,
                                   only_from=(JobStatus.RUNNING,))
    return await deps.jobs.get_job(job.id)


async def _save(job_id: str, result: DomainResult, answer: Answer | None, deps: JobDependencies) -> DomainResult:
    """Store the domain's result (and answer); the result as stored. A result the store refuses
    fails its domain alone, and that failure is recorded: a redelivery then skips the domain
    instead of paying for the same unstorable answer again."""
    try:
        recorded = await deps.jobs.save_result(job_id, result, answer)
    except UnstorableText as error:
        log.error("result could not be stored; its domain fails", extra={"job_id": job_id, "domain": result.domain,
                                                                          "error": str(error)})
        # The call was made (and paid for) all the same: its figures stay with the result.
        result = DomainResult(domain=result.domain, status=ResultStatus.FAILED,
                              source=Source.LLM if result.source is Source.CACHE else result.source,
                              error=f"the answer could not be stored: {error}",
                              tokens_in=result.tokens_in, tokens_out=result.tokens_out, cost_usd=result.cost_usd,
                              answer_tokens_in=result.answer_tokens_in, answer_tokens_out=result.answer_tokens_out,
                              answer_cost_usd=result.answer_cost_usd)
        recorded = await deps.jobs.save_result(job_id, result, None)
    if not recorded:
        log.warning("job already finished (dead-lettered, or by another delivery): its results stay as "
                    "reported, the answer is only cached", extra={"job_id": job_id, "domain": result.domain})
    return result


async def _answer_domain(
    domain: str,
    classifier: Classifier,
    known: Mapping[str, KnownCompany],
    cached: Answer | None,
    deps: JobDependencies,
    owner: str,
) -> tuple[DomainResult, Answer | None]:
    """(the job's result, the answer to upsert in the cache or None) for one domain. Known
    companies and fresh cached answers cost nothing and are served whatever the spend; any other
    path raises SpendingPaused while the owner's (or the global) daily limit is reached."""
    company = known_company(domain, known)
    if company is not None:
        return DomainResult(
            domain=domain,
            status=ResultStatus.DONE,
            answer=True,
            confidence=5,
            reason=known_company_reason(company),
            source=Source.KNOWN_COMPANY,
            tokens_in=0, tokens_out=0, cost_usd=0.0,  # no LLM call: nothing spent, and no answer's call to show
        ), None
    if cached is not None and deps.is_fresh(cached, classifier):
        return DomainResult.from_answer(cached, Source.CACHE, paid=False), None
    if deps.spend_gate is not None and (refusal := await deps.spend_gate(owner)) is not None:
        raise SpendingPaused(refusal)
    site = None
    if deps.precheck is not None:
        site = await deps.precheck.check(domain, classifier, deps.answers, deps.now())
        if site.ended is not None:
            return site.ended
    # Two jobs needing the same uncached domain at once share one LLM call: within this worker
    # by single flight, across workers by a lease in the database.
    (answer, asked), leader = await deps.inflight.run(
        (classifier.name, domain), lambda: _ask_once(domain, classifier, deps, site)
    )
    if leader and asked:
        return DomainResult.from_answer(answer, Source.LLM, paid=True), answer
    # Shared with another job: a stored answer is reused from the cache, but a shared call that
    # failed is that LLM call's failure (FAILED answers are never cached answers). Either way
    # the job that made the call pays for it: this one spent nothing.
    shared = Source.CACHE if answer.status is ResultStatus.DONE else Source.LLM
    return DomainResult.from_answer(answer, shared, paid=False), None


async def _ask_once(domain: str, classifier: Classifier, deps: JobDependencies,
                    site: SiteCheck | None) -> tuple[Answer, bool]:
    """(answer, True) after asking the LLM ourselves, or (answer, False) when another worker
    stored a fresh one since the job looked in the cache (the job's domains run one after
    another, so that look may be old by now). The lease is released by the caller once the
    answer is saved."""
    if deps.leases is None:
        stored = await _fresh_stored(domain, classifier, deps)
        return (stored, False) if stored is not None else (await _ask_llm(domain, classifier, deps, site), True)
    loop = asyncio.get_running_loop()
    # The holder renews its lease while it works, so wait as long as a slow call may take; a
    # dead holder's lease lapses within lease_seconds and we take it over.
    deadline = loop.time() + deps.lease_wait_seconds
    while loop.time() < deadline:
        if await deps.leases.acquire(domain, classifier.name, deps.lease_holder, deps.lease_seconds):
            # Holding the lease, look again: the last holder may have stored the answer and let go
            # of the lease just before we took it.
            stored = await _fresh_stored(domain, classifier, deps)
            if stored is not None:
                await deps.leases.release(domain, classifier.name, deps.lease_holder)
                return stored, False
            async with _renewing(deps.leases, domain, classifier.name, deps):
                return await _ask_llm(domain, classifier, deps, site), True
        await asyncio.sleep(deps.lease_poll_seconds)
        stored = await _fresh_stored(domain, classifier, deps)
        if stored is not None:
            return stored, False
    # The other worker neither answered nor let its lease lapse in time: ask anyway.
    return await _ask_llm(domain, classifier, deps, site), True


async def _fresh_stored(domain: str, classifier: Classifier, deps: JobDependencies) -> Answer | None:
    stored = (await deps.answers.get_answers([domain], classifier.name)).get(domain)
    return stored if stored is not None and deps.is_fresh(stored, classifier) else None


@contextlib.asynccontextmanager
async def _renewing(leases: AnswerLeases, domain: str, classifier: str, deps: JobDependencies) -> AsyncIterator[None]:
    """Keep renewing our lease while the LLM call runs, so a slow call keeps it and a dead
    worker's lease lapses within lease_seconds."""

    async def renew() -> None:
        while True:
            await asyncio.sleep(deps.lease_seconds / 3)
            try:
                await leases.acquire(domain, classifier, deps.lease_holder, deps.lease_seconds)
            except Exception:  # noqa: BLE001 - a missed renewal is retried; at worst a second call
                log.warning("lease renewal failed", extra={"domain": domain})

    async with alongside(renew):
        yield


async def _ask_llm(domain: str, classifier: Classifier, deps: JobDependencies, site: SiteCheck | None) -> Answer:
    evidence = await gather_evidence(domain, classifier.name, deps.search, deps.answers,
                                     reuse_age=deps.evidence_reuse_age, now=deps.now())
    if evidence.reused_from is not None:
        deps.on_evidence_reused(classifier.name)
        log.info("evidence reused", extra={"domain": domain, "classifier": classifier.name,
                                           "reused_from": evidence.reused_from})
    # The quote is checked against the evidence as sent: reused evidence is sent as it was stored.
    answer, _ = await ask_llm(domain, classifier, evidence.items, deps.llm, pricing=deps.pricing,
                              slots=deps.llm_slots, marker=deps.new_marker(), now=deps.now)
    answer = evidence.mark(answer)
    return site.mark(answer) if site is not None else answer
