"""The paid path of one domain: ask the LLM once across jobs and workers (a lease in the
database, renewed while the call runs), or record the question for the provider's batch API; the
evidence gathered (or reused) first either way."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from firmsift.domain.background import alongside
from firmsift.domain.economy import DeferredQuestion
from firmsift.domain.model import Answer, Classifier
from firmsift.services.asking import ask_about, ask_llm, unanswered, unreadable, with_spend_of
from firmsift.services.evidence import Gathered, gather_evidence
from firmsift.services.job_dependencies import JobDependencies
from firmsift.services.precheck import SiteCheck

if TYPE_CHECKING:
    from firmsift.ports.leases import AnswerLeases

log = logging.getLogger(__name__)


async def ask_once(domain: str, classifier: Classifier, deps: JobDependencies,
                    site: SiteCheck | None) -> tuple[Answer, bool]:
    """(answer, True) after asking the LLM ourselves, or (answer, False) when another worker
    stored a fresh one since the job looked in the cache (the job's domains run one after
    another, so that look may be old by now). The lease is released by the caller once the
    answer is saved."""
    if deps.leases is None:
        stored = await _fresh_stored(domain, classifier, deps)
        return (stored, False) if stored is not None else (await ask_now(domain, classifier, deps, site), True)
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
                return await ask_now(domain, classifier, deps, site), True
        await asyncio.sleep(deps.lease_poll_seconds)
        stored = await _fresh_stored(domain, classifier, deps)
        if stored is not None:
            return stored, False
    # The other worker neither answered nor let its lease lapse in time: ask anyway.
    return await ask_now(domain, classifier, deps, site), True


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


async def ask_now(domain: str, classifier: Classifier, deps: JobDependencies, site: SiteCheck | None) -> Answer:
    evidence = await _evidence_for(domain, classifier, deps)
    # The quote is checked against the evidence as sent: reused evidence is sent as it was stored.
    earlier: list[Answer] = []  # unreadable answers asked again: their calls were billed all the same
    for attempt in range(1 + deps.unreadable_retries):
        answer, _ = await ask_llm(domain, classifier, evidence.items, deps.llm, pricing=deps.pricing,
                                  slots=deps.llm_slots, marker=deps.new_marker(), now=deps.now)
        if not unreadable(answer) or attempt == deps.unreadable_retries:
            break
        earlier.append(answer)
        log.info("the model's output could not be read; asking again", extra={"domain": domain, "error": answer.error})
    answer = evidence.mark(with_spend_of(answer, earlier))
    return site.mark(answer) if site is not None else answer


async def defer_question(domain: str, classifier: Classifier, deps: JobDependencies, site: SiteCheck | None,
                 job_id: str) -> None:
    """Record the question for the provider's batch API, with what the answer will carry. The
    store refuses it once the job's batch is cancelled (or the job has ended): then it is never
    sent, and the domain stays PENDING in a job that has ended (its batch shows it CANCELLED)."""
    assert deps.deferred is not None
    evidence = await _evidence_for(domain, classifier, deps)
    question, sent = ask_about(domain, classifier, evidence.items, deps.new_marker())
    template = evidence.mark(unanswered(domain, classifier, sent, deps.now()))
    deferred = DeferredQuestion(question, site.mark(template) if site is not None else template)
    if not await deps.deferred.defer(deferred, job_id):
        log.info("question not recorded: its job's batch was cancelled, or the job has ended",
                 extra={"job_id": job_id, "domain": domain})


async def _evidence_for(domain: str, classifier: Classifier, deps: JobDependencies) -> Gathered:
    evidence = await gather_evidence(domain, classifier.name, deps.search, deps.answers,
                                     reuse_age=deps.evidence_reuse_age, now=deps.now())
    if evidence.reused_from is not None:
        deps.on_evidence_reused(classifier.name)
        log.info("evidence reused", extra={"domain": domain, "classifier": classifier.name,
                                           "reused_from": evidence.reused_from})
    return evidence
