"""The wiring of a worker: the job use-case's dependencies, economy mode's provider batch rounds,
and the queue consumer over the process's store, queues, providers and metrics."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from dependency_injector import providers

from firmsift.adapters.decorators.prometheus_metrics import MeteredQueue, Metrics
from firmsift.adapters.llm.endpoint import is_local_api_base
from firmsift.domain.spend_reservations import ExpectedCost
from firmsift.entrypoints.wiring.llm_calls_at_once import llm_concurrency
from firmsift.entrypoints.outbound_proxy import outbound_proxy_variable
from firmsift.entrypoints.wiring.external import ProviderWiring
from firmsift.entrypoints.wiring.queues import QueueWiring
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.storage import StorageWiring
from firmsift.entrypoints.worker.loop import Worker, WorkerConfig
from firmsift.services.job_replies import FinishedJobs
from firmsift.services.dns_trust import DnsTrust
from firmsift.services.precheck import Precheck
from firmsift.services.process import JobDependencies
from firmsift.services.provider_batches import ProviderBatchDependencies
from firmsift.services.spend_gate import SpendGate, prompt_cost

if TYPE_CHECKING:
    from firmsift.domain.model import Job
    from firmsift.domain.site_signatures import Signatures
    from firmsift.ports.homepage_look import HomepageLooker
    from firmsift.ports.resolver import Resolver


def lease_holder_name() -> str:
    """A worker's name on the answer leases it holds: its host, its process and itself."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def worker_precheck(settings: Settings, resolver: Callable[[], Resolver], homepage: Callable[[], HomepageLooker],
                    signatures: Signatures) -> Precheck | None:
    """The pre-check a worker runs before the LLM, or None when FIRMSIFT_PRECHECK is off (then
    neither the resolver nor the homepage reader is built for it)."""
    if not settings.precheck:
        return None
    return settings_precheck(settings, resolver(), homepage(), signatures)


def unreadable_retries(settings: Settings) -> int:
    """How often a worker asks again when the model's output cannot be read: FIRMSIFT_LLM_UNREADABLE_RETRIES,
    else twice toward a local server (it costs nothing; SmolLM2 wrote unreadable JSON for 2 of 215
    rows) and never toward a provider (each try is paid; the row fails and can be retried on request)."""
    if settings.llm_unreadable_retries is not None:
        return settings.llm_unreadable_retries
    return 2 if is_local_api_base(settings.llm_api_base) else 0


def dns_state(precheck: Precheck | None) -> str:
    """The worker's `dns` check: "ok", or "degraded: why" while negative DNS answers are doubted."""
    if precheck is None or precheck.trust is None:
        return "ok"
    return precheck.trust.state()


def settings_precheck(settings: Settings, resolver: Resolver, homepage: HomepageLooker,
                      signatures: Signatures) -> Precheck:
    """The pre-check as the settings shape it, judging negative DNS answers by the canaries
    (FIRMSIFT_DNS_CANARIES) and by whether a proxy carries outbound traffic."""
    trust = DnsTrust(resolver, settings.dns_canary_list, proxy_variable=outbound_proxy_variable(os.environ))
    return Precheck(resolver, homepage, signatures, max_age=timedelta(days=settings.precheck_ttl_days),
                    reuse_redirect_answer=settings.precheck_reuse_redirect_answer, trust=trust)


def dead_letter_counter(metrics: Metrics) -> Callable[[Job], None]:
    """The worker's on_dead_lettered callback: counts each job found in the dead-letter queue."""
    return lambda _job: metrics.dead_lettered.inc()


class WorkerWiring(QueueWiring, ProviderWiring):
    """A worker's graph: `worker` is built anew on each call, with its own LLM slots, single flight
    and lease holder name."""

    settings, clock, metrics, store, catalog = (
        StorageWiring.settings, StorageWiring.clock, StorageWiring.metrics, StorageWiring.store, StorageWiring.catalog)
    leases, budgets, human_answers, deferred_questions = (
        StorageWiring.leases, StorageWiring.budgets, StorageWiring.human_answers, StorageWiring.deferred_questions)
    work_queue, replies, dead_letters, batch_replies = (
        QueueWiring.work_queue, QueueWiring.replies, QueueWiring.dead_letters, QueueWiring.batch_replies)
    worker_search, worker_llm, pricing, batch_pricing, batch_provider = (
        ProviderWiring.worker_search, ProviderWiring.worker_llm, ProviderWiring.pricing,
        ProviderWiring.batch_pricing, ProviderWiring.batch_provider)
    resolver, homepage, signatures = ProviderWiring.resolver, ProviderWiring.homepage, ProviderWiring.signatures

    worker_queue = providers.Singleton(MeteredQueue, work_queue, metrics)
    precheck = providers.Singleton(worker_precheck, settings, resolver.provider, homepage.provider, signatures)
    dns_check = providers.Callable(dns_state, precheck)  # for /readyz: the pre-check's trust in the DNS
    # Each domain's expected cost is held against the daily limits while its call runs.
    spend_gate = providers.Singleton(SpendGate, budgets, providers.Singleton(
        ExpectedCost, providers.Callable(prompt_cost, pricing, settings.provided.llm_model, catalog)))
    job_dependencies = providers.Factory(
        JobDependencies, jobs=store, answers=store, known=store, search=worker_search, llm=worker_llm, pricing=pricing,
        catalog=catalog, llm_slots=providers.Factory(asyncio.Semaphore, providers.Callable(llm_concurrency, settings)),
        domain_concurrency=settings.provided.domain_concurrency, on_result=metrics.provided.count_domain,
        leases=leases, lease_seconds=settings.provided.answer_lease_seconds,
        lease_holder=providers.Callable(lease_holder_name),
        precheck=precheck,
        spend_gate=spend_gate,
        evidence_reuse_age=settings.provided.evidence_reuse_age,
        on_evidence_reused=metrics.provided.count_evidence_reuse,
        human=human_answers,
        deferred=deferred_questions,
        unreadable_retries=providers.Callable(unreadable_retries, settings),
    )
    # A worker's provider batch rounds (economy mode): one worker at a time, by a lease.
    provider_batch_dependencies = providers.Factory(
        ProviderBatchDependencies, questions=deferred_questions, provider=batch_provider, jobs=store,
        catalog=catalog, pricing=batch_pricing, model=settings.provided.llm_model,
        leases=leases, holder=providers.Callable(lease_holder_name),
        on_job_finished=providers.Singleton(FinishedJobs, replies, store, batch_replies.provided.after_job).provided.tell,
        on_answer=metrics.provided.count_economy_answer,
    )
    worker_config = providers.Factory(
        WorkerConfig, wait_time=settings.provided.wait_time, visibility_timeout=settings.provided.visibility_timeout,
        max_job_seconds=settings.provided.max_job_seconds, max_jobs=settings.provided.worker_jobs,
        dead_letter_check_interval=settings.provided.dead_letter_check_interval,
        shutdown_grace=settings.provided.shutdown_grace_seconds,
        budget_recheck_seconds=settings.provided.budget_recheck_seconds,
    )
    worker = providers.Factory(
        Worker, worker_queue, replies, job_dependencies, worker_config, on_job_finished=metrics.provided.count_job,
        dead_letters=dead_letters, on_dead_lettered=providers.Callable(dead_letter_counter, metrics),
        after_job=batch_replies.provided.after_job, clock=clock,
    )
