"""The dry run of POST /batches: what a batch would cost, read from the same plan the real request
makes (so its counts are what that request would accept), with nothing recorded and no provider
called."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from firmsift.domain.batch_documents import accepted_batch_document
from firmsift.domain.batches import Batch, BatchChunk, BatchPlan, BatchRow
from firmsift.domain.clock import utc_now
from firmsift.domain.estimates import DomainTally, estimate_document, estimated_tokens, tokens_per_question
from firmsift.domain.freshness import PRECHECK_MAX_AGE, is_fresh
from firmsift.domain.known_companies import known_company, with_parents
from firmsift.domain.model import Classifier, Source
from firmsift.services.batch_intake import SubmitBatch, check_batch_request

if TYPE_CHECKING:
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
    model: str
    llm_concurrency: int
    job_size: int
    max_domains: int
    precheck: bool = True
    precheck_max_age: timedelta = PRECHECK_MAX_AGE
    now: Callable[[], datetime] = field(default=utc_now)

    async def estimate(self, command: SubmitBatch) -> dict[str, Any]:
        """The batch's counts as POST /batches would answer them, where its domains would be answered
        from, and the expected LLM tokens, cost and time. Raises what submitting it would."""
        classifier = check_batch_request(command, self.catalog)
        now = self.now()
        plan = BatchPlan(Batch(id=DRY_RUN_ID, classifier=classifier.name, created_at=now), command.rows,
                         read_domain=command.read_domain, job_size=self.job_size, max_domains=self.max_domains,
                         new_job_id=lambda: DRY_RUN_ID)
        tally = DomainTally()
        rejected: list[BatchRow] = []
        chunks = plan.chunks()
        while (chunk := await asyncio.to_thread(_next_chunk, chunks)) is not None:
            rejected.extend(row for row in chunk.rows if row.rejection is not None)
            tally = await self._tally(tally, [domain for job in chunk.jobs for domain in job.domains], classifier, now)
        per_question = tokens_per_question(await self.history.token_history(classifier.name), classifier)
        tokens_in, tokens_out = estimated_tokens(tally, per_question)
        cost = self.pricing().cost(self.model, tokens_in, tokens_out) if tally.new else 0.0
        counts = accepted_batch_document(plan.batch(), rejected)
        del counts["batch_id"]
        return {"dry_run": True, **counts, **estimate_document(
            tally, model=self.model, per_question=per_question, cost_usd=cost, precheck=self.precheck,
            llm_concurrency=self.llm_concurrency)}

    async def _tally(self, tally: DomainTally, domains: list[str], classifier: Classifier,
                     now: datetime) -> DomainTally:
        """`tally` with `domains` added by the worker's order: known company, fresh answer, else new."""
        known = await self.known.find_known(with_parents(domains)) if classifier.uses_known_companies else {}
        cached = await self.answers.get_answers(domains, classifier.name)
        counts = {"known": tally.known, "cached": tally.cached, "cached_precheck": tally.cached_precheck,
                  "new": tally.new}
        for domain in domains:
            answer = cached.get(domain)
            if known_company(domain, known) is not None:
                counts["known"] += 1
            elif answer is not None and is_fresh(answer, now, classifier.prompt_version,
                                                 precheck_max_age=self.precheck_max_age):
                counts["cached_precheck" if answer.source is Source.PRECHECK else "cached"] += 1
            else:
                counts["new"] += 1
        return DomainTally(**counts)


def _next_chunk(chunks: Iterator[BatchChunk]) -> BatchChunk | None:
    return next(chunks, None)
