"""Economy mode's second half: the questions jobs deferred go to the provider's batch API, and its
answers come back to those jobs, priced at the batch price.

One worker at a time does this (a database lease). Each step towards the provider is recorded
before and after it is taken, so a worker killed at any point leaves a record the next round
resumes from: a batch recorded without an upload is uploaded, an upload without a batch id is
looked up in the provider's batch metadata before a batch is created, a created batch is polled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.background import alongside
from firmsift.domain.clock import utc_now
from firmsift.domain.economy import (
    MAX_PROVIDER_ATTEMPTS,
    MAX_REQUESTS_PER_PROVIDER_BATCH,
    DeferredQuestion,
    ProviderBatch,
    ProviderBatchStatus,
    read_result_line,
)
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Answer, Classifier, Completion, DomainResult, ResultStatus, Source
from firmsift.services.asking import read_answer
from firmsift.services.process import conclude_job

if TYPE_CHECKING:
    from firmsift.domain.model import Job
    from firmsift.ports.economy import BatchProvider, DeferredQuestions
    from firmsift.ports.leases import AnswerLeases
    from firmsift.ports.providers import Pricing
    from firmsift.ports.repository import JobRepository

log = logging.getLogger(__name__)
# The one lease on the answer-lease table that says which worker runs provider batches.
LEASE_DOMAIN = "(provider batches)"
LEASE_CLASSIFIER = ""


@dataclass
class ProviderBatchDependencies:
    questions: DeferredQuestions
    provider: BatchProvider
    jobs: JobRepository
    catalog: Mapping[str, Classifier]
    pricing: Pricing  # the batch price: what a provider batch's tokens cost
    model: str  # the model the questions were asked of, as priced
    leases: AnswerLeases
    # Run for each job a provider batch finished: its reply, and its batch's once that has ended.
    on_job_finished: Callable[[Job], Awaitable[None]]
    holder: str = field(default_factory=lambda: uuid.uuid4().hex)
    lease_seconds: float = 60.0  # renewed while a round runs
    max_requests: int = MAX_REQUESTS_PER_PROVIDER_BATCH
    max_attempts: int = MAX_PROVIDER_ATTEMPTS
    now: Callable[[], datetime] = utc_now
    new_id: Callable[[], str] = lambda: uuid.uuid4().hex
    on_answer: Callable[[Answer], None] = lambda answer: None  # e.g. count answers and cost by model


async def run_provider_batches(deps: ProviderBatchDependencies, stop: asyncio.Event, poll_seconds: float) -> None:
    """Every poll_seconds until `stop` is set: one round (see provider_batch_round)."""
    while not stop.is_set():
        try:
            await provider_batch_round(deps)
        except Exception:  # noqa: BLE001 - the provider or the database is down: try again next round
            log.exception("provider batch round failed; trying again in %.0fs", poll_seconds)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), poll_seconds)


async def provider_batch_round(deps: ProviderBatchDependencies) -> bool:
    """Advance every provider batch in flight, then send the questions waiting in new ones.
    False (nothing done) when another worker holds the lease."""
    if not await deps.leases.acquire(LEASE_DOMAIN, LEASE_CLASSIFIER, deps.holder, deps.lease_seconds):
        return False

    async def renew() -> None:
        while True:
            await asyncio.sleep(deps.lease_seconds / 3)
            await deps.leases.acquire(LEASE_DOMAIN, LEASE_CLASSIFIER, deps.holder, deps.lease_seconds)

    try:
        async with alongside(renew):
            queue_full = False
            for batch in await deps.questions.provider_batches_in_flight():
                if (submitted := await _submitted(batch, deps)) is not None:
                    queue_full = await _poll(submitted, deps) or queue_full
            # New batches are polled from the next round on: a question sent back by this
            # round's polls waits for that round too, rather than going out again at once. Over
            # the enqueued-token limit, nothing new goes out until the next round.
            while not queue_full and (questions := await deps.questions.unsent(deps.max_requests)):
                batch = ProviderBatch(id=deps.new_id(), status=ProviderBatchStatus.PREPARING)
                await deps.questions.record_provider_batch(batch, questions)
                log.info("provider batch recorded", extra={"provider_batch": batch.id, "requests": len(questions)})
                await _submitted(batch, deps)
    finally:
        await deps.leases.release(LEASE_DOMAIN, LEASE_CLASSIFIER, deps.holder)
    return True


async def _submitted(batch: ProviderBatch, deps: ProviderBatchDependencies) -> ProviderBatch | None:
    """The provider batch, created at the provider if need be; None when no job waits for any of
    its questions any more (it is closed unsent), or when the provider refused it (a file or batch
    it will not take: asking again gets the same answer), and then its questions go back to
    wait, one attempt counted, so a refusal fails them after max_attempts instead of blocking
    every round. A failure that may pass (an outage, a 429, a 5xx) is raised: the next
    round resumes the batch from its record."""
    try:
        return await _submit(batch, deps)
    except ProviderError as error:
        if error.retryable:
            raise
        log.error("the provider refused a provider batch", extra={"provider_batch": batch.id, "error": str(error)})
        refused = replace(batch, status=ProviderBatchStatus.FAILED)
        await deps.questions.update_provider_batch(refused)
        await _read_results(refused, deps, ended=f"refused by the provider: {error}")
        return None


async def _submit(batch: ProviderBatch, deps: ProviderBatchDependencies) -> ProviderBatch | None:
    """The provider batch, created at the provider if its record says it is not yet; None when
    nothing is left to send in it."""
    if batch.batch_id is None:
        # An upload recorded without a batch id: the batch may have been created just before a
        # crash; the provider's metadata says so, and then it is not created twice.
        created = await deps.provider.find(batch.id) if batch.input_file_id is not None else None
        if created is None:
            if batch.input_file_id is None:
                # Just before the send (the upload is what the provider bills from): a question
                # whose jobs' batches were all cancelled since it was put in this batch (an upload
                # that failed, retried rounds later) is forgotten, never sent.
                await deps.questions.forget_unwaited(batch.id)
                questions = await deps.questions.questions_in(batch.id)
                if not questions:
                    await deps.questions.close_provider_batch(batch)
                    log.info("provider batch closed unsent: no job waits for its questions",
                             extra={"provider_batch": batch.id})
                    return None
                file_id = await deps.provider.upload(batch.id, questions)
                batch = replace(batch, input_file_id=file_id)
                await deps.questions.update_provider_batch(batch)
            assert batch.input_file_id is not None
            created = await deps.provider.create(batch.id, batch.input_file_id)
        batch = replace(created, id=batch.id, input_file_id=batch.input_file_id)
        await deps.questions.update_provider_batch(batch)
        log.info("provider batch created", extra={"provider_batch": batch.id, "batch_id": batch.batch_id})
    return batch


async def _poll(batch: ProviderBatch, deps: ProviderBatchDependencies) -> bool:
    """Ask the provider how the batch stands; once it has ended, read its answers. True when the
    provider failed it for the enqueued-token limit: its questions wait, no attempt counted."""
    polled = await deps.provider.retrieve(batch)
    if polled != batch:
        batch = polled
        await deps.questions.update_provider_batch(batch)
    if batch.queue_full:
        log.warning("provider batch over the enqueued-token limit; its questions wait for the next round",
                    extra={"provider_batch": batch.id, "error": batch.error})
        for question in await deps.questions.questions_in(batch.id):
            await deps.questions.send_again(question, count=False)
        await deps.questions.close_provider_batch(batch)
        return True
    if batch.status.ended:
        await _read_results(batch, deps)
    return False


async def _read_results(batch: ProviderBatch, deps: ProviderBatchDependencies, ended: str | None = None) -> None:
    """Read the ended batch's output and error files into answers for the questions still in it;
    a question without an answer goes out again in the next batch (or fails, after max_attempts).
    Results are saved to the waiting jobs and the jobs finished before the question is forgotten:
    a crash in between reads the files again, and saving the same result twice changes nothing.
    `ended` says why a question got no answer (by default: the batch ended without it)."""
    waiting = {question.custom_id: question for question in await deps.questions.questions_in(batch.id)}
    answers: list[tuple[DeferredQuestion, Answer]] = []
    for file_id in (batch.output_file_id, batch.error_file_id):
        for line in await deps.provider.lines(file_id) if file_id is not None else []:
            outcome = read_result_line(line)
            question = waiting.pop(outcome.custom_id, None) if outcome is not None else None
            if question is None or outcome is None:
                continue  # a line for no question of ours (or one already answered)
            if outcome.completion is not None:
                answers.append((question, _answer(question, outcome.completion, deps)))
            elif (failed := await _unanswered(question, outcome.error or "no answer", deps)) is not None:
                answers.append((question, failed))
    for question in waiting.values():
        why = ended or f"the provider batch ended {batch.status.value} without its answer" + (
            f" ({batch.error})" if batch.error else "")
        failed = await _unanswered(question, why, deps)
        if failed is not None:
            answers.append((question, failed))
    given = {question.custom_id: await _give_to_waiters(question, answer, deps) for question, answer in answers}
    await _conclude(dict.fromkeys(job_id for job_ids in given.values() for job_id in job_ids), deps)
    for question, answer in answers:
        late = await deps.questions.answered(question, answer, given[question.custom_id])
        deps.on_answer(answer)
        for job_id in late:  # began waiting while the answer was being given out: it is theirs too
            await deps.jobs.save_result(job_id, DomainResult.from_answer(answer, _shared(answer), paid=False), None)
        await _conclude(late, deps)
    await deps.questions.close_provider_batch(batch)
    log.info("provider batch read", extra={"provider_batch": batch.id, "answers": len(answers)})


def _answer(question: DeferredQuestion, completion: Completion, deps: ProviderBatchDependencies) -> Answer:
    classifier = deps.catalog[question.template.classifier]
    template = replace(question.template, answered_at=deps.now())
    return read_answer(template, question.question, completion, classifier, pricing=deps.pricing, priced_as=deps.model)


async def _unanswered(question: DeferredQuestion, error: str, deps: ProviderBatchDependencies) -> Answer | None:
    """The FAILED answer of a question out of attempts, or None after putting it back to be sent again."""
    if question.attempts + 1 < deps.max_attempts:
        await deps.questions.send_again(question)
        return None
    return replace(question.template, answered_at=deps.now(), status=ResultStatus.FAILED,
                   error=f"the provider's batch API gave no answer in {deps.max_attempts} batches: {error}")


async def _give_to_waiters(question: DeferredQuestion, answer: Answer, deps: ProviderBatchDependencies) -> list[str]:
    """Save the answer as the result of each waiting job: the first pays for it, the others
    reuse it as a cached answer (as jobs sharing one call do on the normal path)."""
    job_ids = await deps.questions.waiting_jobs(question)
    for index, job_id in enumerate(job_ids):
        source = _shared(answer) if index else Source.LLM
        await deps.jobs.save_result(job_id, DomainResult.from_answer(answer, source, paid=index == 0), None)
    return job_ids


def _shared(answer: Answer) -> Source:
    """The source of an answer a job did not pay for: the cache, unless the call failed."""
    return Source.CACHE if answer.status is ResultStatus.DONE else Source.LLM


async def _conclude(job_ids: Iterable[str], deps: ProviderBatchDependencies) -> None:
    """Finish each job with no domain left waiting, and tell its caller (and its batch's)."""
    for job_id in job_ids:
        job = await conclude_job(job_id, deps.jobs)
        if job is not None and job.status.finished:
            await deps.on_job_finished(job)
