"""The dry run of POST /batches: what a batch would cost, read from the same plan the real request
makes (so its counts are what that request would accept), with nothing recorded and no provider
called."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any

from firmsift.domain.batch_documents import REJECTED_LISTED, accepted_batch_document
from firmsift.domain.batches import Batch, BatchChunk, BatchPlan, BatchRow
from firmsift.domain.clock import utc_now
from firmsift.domain.economy import BatchMode, batch_mode
from firmsift.domain.estimates import (
    DomainTally,
    WorkerPace,
    estimate_document,
    estimated_tokens,
    tokens_per_question,
)
from firmsift.domain.freshness import PRECHECK_MAX_AGE, is_fresh
from firmsift.domain.known_companies import known_company, with_parents
from firmsift.domain.model import Classifier, Source
from firmsift.services.batch_intake import SubmitBatch, check_batch_request

if TYPE_CHECKING:
    from firmsift.ports.human_answers import HumanAnswerStore
    from firmsift.ports.providers import Pricing
    from firmsift.ports.repository import AnswerHistory, AnswerStore, KnownCompanies

DRY_RUN_ID = "dry-run"


@dataclass
class BatchEstimator:
    """Prices a batch request. `pricing` is called only when there is something to price (the
    API process builds its price map then, not at start)."""

    catalog: Mapping[str, Classifier]
    known: KnownCompanies
    answers: AnswerStore
    history: AnswerHistory
    pricing: Callable[[], Pricing]
    batch_pricing: Callable[[], Pricing]  # economy mode's: the provider's batch API
    model: str
    pace: WorkerPace
    job_size: int
    max_domains: int
    precheck: bool = True
    precheck_max_age: timedelta | None = PRECHECK_MAX_AGE  # None: the pre-check is off, its outcomes not reused
    now: Callable[[], datetime] = field(default=utc_now)
    human: HumanAnswerStore | None = None  # people's corrections: counted first, as the worker uses them

    async def estimate(self, command: SubmitBatch) -> dict[str, Any]:
        """The batch's counts as POST /batches would answer them, where its domains would be answered
        from, and the expected LLM tokens, cost and time. Raises what submitting it would."""
        classifier = check_batch_request(command, self.catalog)
        now = self.now()
        mode = batch_mode(command.mode)
        plan = BatchPlan(Batch(id=DRY_RUN_ID, classifier=classifier.name, created_at=now, mode=mode), command.rows,
                         read_domain=command.read_domain, job_size=self.job_size, max_domains=self.max_domains,
                         new_job_id=lambda: DRY_RUN_ID)
        tally = DomainTally()
        rejected: list[BatchRow] = []
        chunks = plan.chunks()
        while (chunk := await asyncio.to_thread(_next_chunk, chunks)) is not None:
            rejected.extend(islice((row for row in chunk.rows if row.rejection is not None),
                                   REJECTED_LISTED - len(rejected)))
            tally = await self._tally(tally, [domain for job in chunk.jobs for domain in job.domains], classifier, now)
        per_question = tokens_per_question(await self.history.token_history(classifier.name), classifier)
        tokens_in, tokens_out = estimated_tokens(tally, per_question)
        pricing = self.batch_pricing if mode is BatchMode.ECONOMY else self.pricing
        cost = pricing().cost(self.model, tokens_in, tokens_out) if tally.new else 0.0
        counts = accepted_batch_document(plan.batch(), rejected)
        del counts["batch_id"]
        estimate = estimate_document(
            tally, model=self.model, per_question=per_question, cost_usd=cost, precheck=self.precheck,
            latency=await self.history.latency_history(classifier.name), pace=self.pace)
        if mode is BatchMode.ECONOMY and tally.new:
            estimate["llm"]["wall_time_seconds"] = None
            estimate["llm"]["wall_time"] = "within 24 hours: economy mode asks through the provider's batch API"
        return {"dry_run": True, **counts, **estimate}

    async def _tally(self, tally: DomainTally, domains: list[str], classifier: Classifier,
                     now: datetime) -> DomainTally:
        """`tally` with `domains` added by the worker's order: human answer, known company, fresh
        answer, else new."""
        humans = await self.human.human_answers(domains, classifier.name) if self.human is not None else {}
        known = await self.known.find_known(with_parents(domains)) if classifier.uses_known_companies else {}
        cached = await self.answers.get_answers(domains, classifier.name)
        counts = {"human": tally.human, "known": tally.known, "cached": tally.cached, "cached_precheck": tally.cached_precheck,
                  "new": tally.new}
        for domain in domains:
            answer = cached.get(domain)
            if domain in humans:
                counts["human"] += 1
            elif known_company(domain, known) is not None:
                counts["known"] += 1
            elif answer is not None and is_fresh(answer, now, classifier.prompt_version,
                                                 precheck_max_age=self.precheck_max_age):
                counts["cached_precheck" if answer.source is Source.PRECHECK else "cached"] += 1
            else:
                counts["new"] += 1
        return DomainTally(**counts)


def _next_chunk(chunks: Iterator[BatchChunk]) -> BatchChunk | None:
    return next(chunks, None)
