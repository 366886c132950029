"""The consumer use-case: answer every unfinished domain of a job by the cheapest path."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from firmsift.domain.budgets import BudgetExhausted, SpendingPaused
from firmsift.domain.human_answers import HumanAnswer, human_result
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
from firmsift.ports.infrastructure_errors import DatabaseFailure
from firmsift.services.held_answers import HeldAnswer, worth_holding
from firmsift.services.job_dependencies import JobDependencies
from firmsift.services.paid_path import ask_once, defer_question

if TYPE_CHECKING:
    from firmsift.ports.repository import JobRepository

log = logging.getLogger(__name__)


async def process_job(job_id: str, deps: JobDependencies) -> Job | None:
    """Finish the job and return it, or None when no such job exists (the message is garbage).

    Domains already finished in this job (a redelivery after a crash) are skipped; the others
    run concurrently, bounded by domain_concurrency. A provider failure fails only its domain.
    A domain that would cost money while a spend limit is reached is left PENDING; once the
    others are done the job is PENDING again and SpendingPaused is raised (nothing fails).
    A database failure ends the domain it hit, not its siblings (their calls may be paid for
    already); an answer the database would not store is held (deps.held) and saved later, and the
    first failure is raised once every domain has ended, so the message comes back.
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
    humans = await deps.human.human_answers(pending, classifier.name) if deps.human is not None else {}
    known = await deps.known.find_known(with_parents(pending)) if classifier.uses_known_companies else {}
    deferral = await deps.deferred.deferral(job.id) if deps.deferred is not None else None
    # A refresh asks again about domains whose cached answers are still fresh: it looks at none.
    cached = {} if deferral is not None and deferral.refresh else await deps.answers.get_answers(pending, classifier.name)
    slots = asyncio.Semaphore(deps.domain_concurrency)
    refusals: list[BudgetExhausted] = []
    defer_for = job.id if deferral is not None else None
    deferred: list[str] = []
    failures: list[DatabaseFailure] = []

    async def run(domain: str) -> None:
        async with slots:
            try:
                await answer_and_store(domain)
            except SpendingPaused as paused:
                refusals.append(paused.refusal)  # caught here: the TaskGroup must not cancel paid calls
            except DatabaseFailure as error:
                # Caught here too: a sibling's LLM call may be answered (and billed) already.
                failures.append(error)
                log.warning("domain not finished: the database failed",
                            extra={"job_id": job.id, "domain": domain, "error": str(error)})

    async def answer_and_store(domain: str) -> None:
        holds: list[str | None] = []  # the domain's hold on the daily limits, once taken
        paid: float | None = None  # what this job's own call cost, once its result is stored
        kept = False  # its answer is held: the hold stays until the answer is stored
        try:
            outcome = await _answer_domain(domain, classifier, humans.get(domain), known,
                                           cached.get(domain), deps, job.owner, defer_for, holds, job.id)
            if outcome is None:
                deferred.append(domain)  # its result stays PENDING until the provider batch answers
                return
            result, answer = outcome
            try:
                result = await _save(job.id, result, answer, deps)
            except DatabaseFailure:
                if answer is None or not worth_holding(answer):
                    raise  # nothing paid to keep: the next delivery finds it again as cheaply
                kept = True
                deps.held.hold(HeldAnswer(job.id, result, answer, holds[0] if holds else None))
                log.warning("answer held: the database did not store it; saved again until it does",
                            extra={"job_id": job.id, "domain": domain, "cost_usd": answer.cost_usd})
                raise
            if answer is not None:
                deps.held.drop(job.id, domain)
            paid = result.cost_usd if answer is not None else None
        finally:
            if holds and deps.spend_gate is not None and not kept:
                # The cost is stored (or the path ended unpaid): the hold has done its work.
                await deps.spend_gate.settle(holds[0], classifier.name, paid)
        if answer is not None and deps.leases is not None:
            # Only now that the answer is stored (or refused) may another worker look for it.
            await deps.leases.release(domain, classifier.name, deps.lease_holder)
        deps.on_result(result)
        log.info("domain answered", extra={"job_id": job.id, "domain": domain, "status": result.status.value,
                                           "source": result.source.value if result.source else None,
                                           "error": result.error})

    # A TaskGroup, not gather: no domain runs on detached after the job returns or raises (a bug
    # in one cancels its siblings); a database failure is caught in `run` and raised after them.
    async with asyncio.TaskGroup() as group:
        for domain in pending:
            group.create_task(run(domain))
    if failures:
        raise failures[0]  # the message comes back; what was stored or held is not asked again
    if refusals:
        await deps.jobs.set_job_status(job.id, JobStatus.PENDING, only_from=(JobStatus.RUNNING,))
        log.info("job paused by a spend limit", extra={"job_id": job.id, "paused_domains": len(refusals)})
        raise SpendingPaused(refusals[-1])
    if deferred:
        # The job stays RUNNING and its message is done with: the provider batch finishes it.
        log.info("job waits for the provider's batch API", extra={"job_id": job.id, "deferred_domains": len(deferred)})
        return await deps.jobs.get_job(job.id)
    return await conclude_job(job.id, deps.jobs)


async def save_held_answers(deps: JobDependencies, stop: asyncio.Event) -> None:
    """Until `stop` is set, save the answers deps.held keeps (see held_answers.py), each with what
    its job's own save would have done next: its spend hold dropped, its lease released."""

    async def save(kept: HeldAnswer) -> None:
        result = await _save(kept.job_id, kept.result, kept.answer, deps)
        if deps.spend_gate is not None and kept.hold is not None:
            await deps.spend_gate.settle(kept.hold, kept.answer.classifier, result.cost_usd)
        if deps.leases is not None:
            await deps.leases.release(kept.result.domain, kept.answer.classifier, deps.lease_holder)

    await deps.held.keep_saving(save, stop)


async def conclude_job(job_id: str, jobs: JobRepository) -> Job | None:
    """Finish a RUNNING job none of whose domains is PENDING: FAILED when every domain failed,
    else DONE. Only from RUNNING: a job failed by dead-lettering while this (late) delivery ran
    stays as its caller was told; a redriven one (PENDING again) is finished by its new delivery."""
    job = await jobs.get_job(job_id)
    if job is None or job.status is not JobStatus.RUNNING or any(
            r.status is ResultStatus.PENDING for r in job.results):
        return job
    all_failed = all(r.status is ResultStatus.FAILED for r in job.results)
    await jobs.set_job_status(job_id, JobStatus.FAILED if all_failed else JobStatus.DONE,
                              only_from=(JobStatus.RUNNING,))
    return await jobs.get_job(job_id)


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
    human: HumanAnswer | None,
    known: Mapping[str, KnownCompany],
    cached: Answer | None,
    deps: JobDependencies,
    owner: str,
    defer_for: str | None = None,
    holds: list[str | None] | None = None,
    job_id: str = "",
) -> tuple[DomainResult, Answer | None] | None:
    """(the job's result, the answer to upsert in the cache or None) for one domain. A human
    answer comes first (a person looked at this very domain; the cache is left as it is), then
    known companies and fresh cached answers: these cost nothing and are served whatever the
    spend; any other path first holds its expected cost on the daily limits (appended to `holds`,
    for the caller to settle once the result is stored) and raises SpendingPaused when the owner's
    (or the global) limit is reached with what finished and what is held. With `defer_for` (an economy job's id), a domain that needs the LLM has its question
    recorded for the provider's batch API instead, and None is returned. An answer this worker
    holds because the database would not store it is not asked again: the job's own (`job_id`) is
    its result, with the hold it had; another job's is served as a fresh cached answer would be."""
    if human is not None:
        return human_result(human), None
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
    held = deps.held.find(job_id, classifier.name, domain)
    if held is not None and held.job_id == job_id:
        if holds is not None:
            holds.append(held.hold)
        return held.result, held.answer
    if held is not None and deps.is_fresh(held.answer, classifier):
        return DomainResult.from_answer(held.answer, Source.CACHE, paid=False), None
    if deps.spend_gate is not None:
        hold = await deps.spend_gate.hold(owner, classifier.name)
        if isinstance(hold, BudgetExhausted):
            raise SpendingPaused(hold)
        if holds is not None:
            holds.append(hold)
    site = None
    if deps.precheck is not None:
        site = await deps.precheck.check(domain, classifier, deps.answers, deps.now())
        if site.ended is not None:
            return site.ended
    if defer_for is not None and deps.deferred is not None:
        await defer_question(domain, classifier, deps, site, defer_for)
        return None
    # Two jobs needing the same uncached domain at once share one LLM call: within this worker
    # by single flight, across workers by a lease in the database.
    (answer, asked), leader = await deps.inflight.run(
        (classifier.name, domain), lambda: ask_once(domain, classifier, deps, site)
    )
    if leader and asked:
        return DomainResult.from_answer(answer, Source.LLM, paid=True), answer
    # Shared with another job: a stored answer is reused from the cache, but a shared call that
    # failed is that LLM call's failure (FAILED answers are never cached answers). Either way
    # the job that made the call pays for it: this one spent nothing.
    shared = Source.CACHE if answer.status is ResultStatus.DONE else Source.LLM
    return DomainResult.from_answer(answer, shared, paid=False), None
