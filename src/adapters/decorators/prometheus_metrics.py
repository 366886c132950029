"""Prometheus metrics, and port decorators that count and time LLM, search and queue calls."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from firmsift.domain.model import Answer, DomainResult, Evidence, Job
from firmsift.domain.errors import ProviderError
from firmsift.domain.work_messages import OutgoingMessage
from firmsift.domain.pacing import PacingState
from firmsift.ports.providers import LLM, Completion, Pricing, Search
from firmsift.ports.queue import QueueMessage, WorkQueue

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)


class Metrics:
    """Every firmsift metric, in one registry per process."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.jobs_accepted = Counter("firmsift_jobs_accepted", "Jobs accepted by the API", registry=r)
        self.jobs_finished = Counter("firmsift_jobs_finished", "Jobs finished by workers", ["status"], registry=r)
        self.job_seconds = Histogram("firmsift_job_seconds", "Time a worker spent on one delivery of a job",
                                     buckets=_LATENCY_BUCKETS, registry=r)
        self.domains = Counter("firmsift_domains", "Domains answered, by path taken and outcome",
                               ["source", "status"], registry=r)
        self.site_statuses = Counter("firmsift_domain_site_statuses",
                                     "Domains answered, by the pre-check's domain status", ["status"], registry=r)
        self.llm_calls = Counter("firmsift_llm_calls", "LLM calls, by outcome", ["outcome"], registry=r)
        self.llm_tokens = Counter("firmsift_llm_tokens", "LLM tokens billed as the provider reported them, by "
                                  "configured model and direction (in: prompt, out: completion)",
                                  ["model", "direction"], registry=r)
        self.llm_cost = Counter("firmsift_llm_cost_usd", "US dollars of the LLM calls whose price is known, "
                                "by configured model", ["model"], registry=r)
        self.llm_cost_unknown = Counter("firmsift_llm_calls_cost_unknown", "LLM calls answered or billed whose "
                                        "cost is unknown (tokens not reported, or no price for the model)",
                                        ["model"], registry=r)
        self.llm_seconds = Histogram("firmsift_llm_call_seconds", "LLM call latency", buckets=_LATENCY_BUCKETS,
                                     registry=r)
        self.llm_rate_limited = Counter("firmsift_llm_rate_limited", "LLM call attempts the provider refused "
                                        "as rate limited (HTTP 429)", registry=r)
        self.llm_pacing_wait = Counter("firmsift_llm_pacing_wait_seconds", "Seconds LLM call attempts waited for "
                                       "their paced turn", registry=r)
        self.llm_learned_limit = Gauge("firmsift_llm_learned_limit_per_minute", "The LLM provider's limits per "
                                       "minute as its headers announced them, by kind (requests, tokens)",
                                       ["kind"], registry=r)
        self.search_calls = Counter("firmsift_search_calls", "Search calls, by provider and outcome",
                                    ["provider", "outcome"], registry=r)
        self.search_seconds = Histogram("firmsift_search_call_seconds", "Search call latency, by provider",
                                        ["provider"], buckets=_LATENCY_BUCKETS, registry=r)
        self.evidence_reused = Counter("firmsift_evidence_reused", "LLM questions asked on another classifier's "
                                       "recent evidence instead of a new search, by classifier asked",
                                       ["classifier"], registry=r)
        self.messages_received = Counter("firmsift_queue_messages_received", "Work-queue messages received",
                                         registry=r)
        self.messages_deleted = Counter("firmsift_queue_messages_deleted", "Work-queue messages deleted", registry=r)
        self.dead_lettered = Counter("firmsift_messages_dead_lettered",
                                     "Jobs found in the dead-letter queue and marked FAILED", registry=r)
        self.economy_answers = Counter("firmsift_economy_answers", "Answers read from the provider's batch API "
                                       "(economy mode), by outcome", ["status"], registry=r)

    def count_domain(self, result: DomainResult) -> None:
        self.domains.labels(source=result.source.value if result.source else "none", status=result.status.value).inc()
        if result.site_status is not None:
            self.site_statuses.labels(status=result.site_status).inc()

    def count_pacing(self, state: PacingState, waited: float) -> None:
        """A paced turn: the seconds it waited, and the limits learned so far."""
        self.llm_pacing_wait.inc(waited)
        for kind, limit in (("requests", state.limit_requests), ("tokens", state.limit_tokens)):
            if limit:
                self.llm_learned_limit.labels(kind=kind).set(limit)

    def count_evidence_reuse(self, classifier: str) -> None:
        self.evidence_reused.labels(classifier=classifier).inc()

    def count_economy_answer(self, answer: Answer) -> None:
        """An answer a provider batch gave (or a question it failed): counted, and its tokens and
        cost added to the LLM's, by the model that answered."""
        self.economy_answers.labels(status=answer.status.value).inc()
        model = answer.model or "unknown"
        if answer.tokens_in is not None and answer.tokens_out is not None:
            self.llm_tokens.labels(model=model, direction="in").inc(answer.tokens_in)
            self.llm_tokens.labels(model=model, direction="out").inc(answer.tokens_out)
        if answer.cost_usd is not None:
            self.llm_cost.labels(model=model).inc(answer.cost_usd)

    def count_job(self, job: Job, seconds: float) -> None:
        self.jobs_finished.labels(status=job.status.value).inc()
        self.job_seconds.observe(seconds)

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


@contextlib.contextmanager
def _observed(calls: Counter, seconds: Histogram, **labels: str) -> Iterator[None]:
    """Count the call by outcome and time it, whatever happens, under `labels` (e.g. the provider)."""
    started = time.perf_counter()
    try:
        yield
    except Exception:
        calls.labels(outcome="error", **labels).inc()
        raise
    else:
        calls.labels(outcome="ok", **labels).inc()
    finally:
        (seconds.labels(**labels) if labels else seconds).observe(time.perf_counter() - started)


class MeteredLLM:
    """An LLM that counts and times every call of the one it wraps, and counts the tokens each
    call was billed (an answer, or a failure that reports them) and their cost by `pricing`."""

    def __init__(self, llm: LLM, metrics: Metrics, pricing: Pricing) -> None:
        self.inner = llm
        self.model = llm.model
        self.metrics = metrics
        self.pricing = pricing

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        try:
            with _observed(self.metrics.llm_calls, self.metrics.llm_seconds):
                completion = await self.inner.complete(system, user, json_schema=json_schema)
        except ProviderError as error:
            if error.prompt_tokens is not None or error.completion_tokens is not None:
                self._count(error.prompt_tokens, error.completion_tokens)
            raise
        self._count(completion.prompt_tokens, completion.completion_tokens)
        return completion

    def _count(self, prompt_tokens: int | None, completion_tokens: int | None) -> None:
        tokens = self.metrics.llm_tokens
        if prompt_tokens is not None:
            tokens.labels(model=self.model, direction="in").inc(prompt_tokens)
        if completion_tokens is not None:
            tokens.labels(model=self.model, direction="out").inc(completion_tokens)
        cost = self.pricing.cost(self.model, prompt_tokens, completion_tokens)
        if cost is None:
            self.metrics.llm_cost_unknown.labels(model=self.model).inc()
        else:
            self.metrics.llm_cost.labels(model=self.model).inc(cost)


class MeteredSearch:
    """A search provider that counts and times every call of the one it wraps, by its name."""

    def __init__(self, search: Search, metrics: Metrics) -> None:
        self.inner = search
        self.name = search.name
        self.metrics = metrics

    async def gather(self, domain: str) -> list[Evidence]:
        with _observed(self.metrics.search_calls, self.metrics.search_seconds, provider=self.name):
            return await self.inner.gather(domain)


class MeteredQueue:
    """A work queue that counts received and deleted messages of the one it wraps."""

    def __init__(self, queue: WorkQueue, metrics: Metrics) -> None:
        self.inner = queue
        self.metrics = metrics

    async def send(self, body: str, *, group_id: str, dedup_id: str) -> str:
        return await self.inner.send(body, group_id=group_id, dedup_id=dedup_id)

    async def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        await self.inner.send_many(messages)

    async def receive(self, *, max_messages: int = 1, wait_seconds: float = 0.0) -> list[QueueMessage]:
        messages = await self.inner.receive(max_messages=max_messages, wait_seconds=wait_seconds)
        self.metrics.messages_received.inc(len(messages))
        return messages

    async def delete(self, receipt: str) -> None:
        await self.inner.delete(receipt)
        self.metrics.messages_deleted.inc()

    async def change_visibility(self, receipt: str, timeout_seconds: float) -> None:
        await self.inner.change_visibility(receipt, timeout_seconds)
