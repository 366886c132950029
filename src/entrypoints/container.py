"""The composition root: settings -> adapters -> use-cases, for every process of firmsift. With
lazy_adapters.py (the adapters whose SDKs are imported on demand) and memory_container.py (the
in-memory graph), the only place naming concrete adapters."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from dependency_injector import containers, providers

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.files.completion_cache import CompletionCacheFile
from firmsift.adapters.files.evidence_snapshots import SnapshotFiles
from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.adapters.decorators.prometheus_metrics import MeteredLLM, MeteredQueue, MeteredSearch, Metrics
from firmsift.adapters.decorators.rate_budget import RateBudget, RateLimitedLLM, RateLimitedSearch
from firmsift.adapters.readiness import IntakeOutcomes, Readiness
from firmsift.adapters.decorators.retrying import RetryingLLM, RetryingSearch, RetryPolicy
from firmsift.adapters.sql.batch_intake import SqlBatchIntake
from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.engine import open_engine
from firmsift.adapters.sql.job_intake import SqlJobIntake
from firmsift.adapters.sql.keys import SqlApiKeys
from firmsift.adapters.sql.leases import SqlLeases
from firmsift.adapters.sql.migrations import upgrade
from firmsift.adapters.sql.queue import SqlQueue, SqlReplyPublisher
from firmsift.adapters.sql.spend import SqlSpendLedger
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.freshness import PRECHECK_MAX_AGE
from firmsift.entrypoints.http.app import create_app
from firmsift.entrypoints.lazy_adapters import (
    ensure_declared_queues,
    make_homepage,
    make_llm,
    make_pricing,
    make_resolver,
    make_worker_pricing,
    make_searches,
    make_sqs_queue,
    make_sqs_replies,
    open_sqs_client,
)
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.worker.loop import Worker, WorkerConfig
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batch_intake import RecordBatchThenPublish
from firmsift.services.batches import BatchReplies
from firmsift.services.budgets import Budgets
from firmsift.services.precheck import Precheck
from firmsift.services.process import JobDependencies
from firmsift.services.search_chain import SearchChain
from firmsift.services.submit import RecordThenPublish

if TYPE_CHECKING:
    from firmsift.domain.model import Job
    from firmsift.domain.site_signatures import Signatures
    from firmsift.ports.homepage_look import HomepageLooker
    from firmsift.ports.providers import Search
    from firmsift.ports.resolver import Resolver


def lease_holder_name() -> str:
    """A worker's name on the answer leases it holds: its host, its process and itself."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def worker_search_chain(searches: Sequence[Search], policy: RetryPolicy, requests_per_minute: float,
                        metrics: Metrics) -> SearchChain:
    """The search a worker uses: the configured providers asked in order, each behind its own
    rate budget (each attempt waits for a slot), its own retries with backoff wrapping the
    attempts, and its own metrics counting and timing whole calls."""
    return SearchChain([
        MeteredSearch(RetryingSearch(RateLimitedSearch(search, RateBudget(requests_per_minute)), policy), metrics)
        for search in searches
    ])


def worker_precheck(settings: Settings, resolver: Callable[[], Resolver], homepage: Callable[[], HomepageLooker],
                    signatures: Signatures) -> Precheck | None:
    """The pre-check a worker runs before the LLM, or None when FIRMSIFT_PRECHECK is off (then
    neither the resolver nor the homepage reader is built for it)."""
    if not settings.precheck:
        return None
    return Precheck(resolver(), homepage(), signatures, max_age=timedelta(days=settings.precheck_ttl_days),
                    reuse_redirect_answer=settings.precheck_reuse_redirect_answer)


def precheck_max_age(settings: Settings) -> timedelta:
    """How long a pre-check outcome counts as fresh: FIRMSIFT_PRECHECK_TTL_DAYS while the pre-check
    runs, else the default (the worker's rule, JobDependencies.is_fresh)."""
    return timedelta(days=settings.precheck_ttl_days) if settings.precheck else PRECHECK_MAX_AGE


def dead_letter_counter(metrics: Metrics) -> Callable[[Job], None]:
    """The worker's on_dead_lettered callback: counts each job found in the dead-letter queue."""
    return lambda _job: metrics.dead_lettered.inc()


class Container(containers.DeclarativeContainer):
    """Every object graph of firmsift: the API's (`api`), a worker's, `firmsift eval`'s and the commands'.

    It also owns what must be closed. The engine and the SQS client are Resources, closed by
    `container.shutdown_resources()` when the command ends; HTTP clients belong to the event loop
    that used them, so each is registered on `http_clients`, an exit stack that the code running
    that loop enters (`async with container.http_clients():`) and that closes them as it leaves.
    In-memory adapters replace the real ones in memory_container.in_memory_container.
    """

    settings = providers.Dependency(instance_of=Settings)
    # Measures intervals (the worker's heartbeat and liveness, the in-memory queue's and leases'
    # timeouts): the event loop's own clock, so a test on a virtual-time loop overrides it with that.
    clock = providers.Object(time.monotonic)
    metrics = providers.Singleton(Metrics)
    http_clients = providers.Singleton(contextlib.AsyncExitStack)

    engine = providers.Resource(
        open_engine, settings.provided.database_url,
        pool_size=settings.provided.db_pool_size, max_overflow=settings.provided.db_max_overflow,
    )
    store = providers.Singleton(SqlStore, engine)
    api_keys = providers.Singleton(SqlApiKeys, engine)
    # Daily spend limits: the key's own and FIRMSIFT_DAILY_SPEND_LIMIT_USD, against what finished today (UTC).
    spend_ledger = providers.Singleton(SqlSpendLedger, engine)
    budgets = providers.Singleton(Budgets, spend_ledger, api_keys, settings.provided.daily_spend_limit_usd)
    backend = settings.provided.queue_backend

    # The database queue (SQLite or PostgreSQL): the embedded default, and production without SQS.
    db_queue = providers.Singleton(
        SqlQueue, engine, settings.provided.queue_name,
        visibility_timeout=settings.provided.visibility_timeout,
        max_receives=settings.provided.max_receives,
        dead_letter_queue=settings.provided.dead_letter_queue,
        poll_interval=settings.provided.poll_interval,
    )
    db_dead_letter_queue = providers.Singleton(
        SqlQueue, engine, settings.provided.dead_letter_queue,
        visibility_timeout=settings.provided.visibility_timeout, max_receives=None,
        poll_interval=settings.provided.poll_interval,
    )
    # Amazon SQS (or an emulator at sqs_endpoint_url); the dead-letter queue and max receives
    # are the queue's redrive policy, declared in deploy/queues.toml.
    sqs_client = providers.Resource(open_sqs_client, settings)
    sqs_queue = providers.Singleton(make_sqs_queue, sqs_client, settings.provided.work_queue,
                                    settings.provided.visibility_timeout)

    work_queue = providers.Selector(backend, db=db_queue, sqs=sqs_queue)
    declared_queues = providers.Callable(ensure_declared_queues, sqs_client, settings)
    intake = providers.Selector(
        backend,
        # The job row and its message in one transaction: no publish gap on the database queue.
        db=providers.Singleton(SqlJobIntake, engine, store, db_queue),
        # Row first, then the message; a failed publish marks the job FAILED (503 to the caller).
        sqs=providers.Singleton(RecordThenPublish, store, sqs_queue),
    )
    # Workers drain the dead-letter queue: each message's job becomes FAILED and is replied to.
    dead_letters = providers.Selector(
        backend,
        db=db_dead_letter_queue,
        sqs=providers.Singleton(make_sqs_queue, sqs_client, settings.provided.dead_letter_queue,
                                settings.provided.visibility_timeout),
    )
    replies = providers.Selector(
        backend,
        db=providers.Singleton(SqlReplyPublisher, engine),
        sqs=providers.Singleton(make_sqs_replies, sqs_client),
    )
    # Reads an embedded reply queue: call with the queue name. No dead-letter queue for replies.
    reply_reader = providers.Factory(
        SqlQueue, engine, visibility_timeout=settings.provided.visibility_timeout, max_receives=None,
        poll_interval=settings.provided.poll_interval,
    )
    # Batches: split into jobs written (with their messages, on the database queue) in one
    # transaction; a batch replies once, when it ends, from the worker that finished it.
    batches = providers.Singleton(SqlBatches, store)
    batch_intake = providers.Selector(
        backend,
        db=providers.Singleton(SqlBatchIntake, engine, batches, db_queue),
        sqs=providers.Singleton(RecordBatchThenPublish, batches, store, sqs_queue),
    )
    batch_replies = providers.Singleton(BatchReplies, batches, replies)
    catalog = providers.Singleton(load_catalog, settings.provided.classifiers_dir)
    llm = providers.Singleton(make_llm, settings, http_clients)
    pricing = providers.Singleton(make_worker_pricing, settings)  # the configured model's token prices
    # The pre-check's signatures (parking services, bot walls), DNS resolver and homepage reader;
    # the homepage reader is also the `homepage` search provider, so a page looked at is not
    # fetched again for evidence.
    signatures = providers.Singleton(load_signatures, settings.provided.signatures_dir)
    resolver = providers.Singleton(make_resolver, settings)
    homepage = providers.Singleton(make_homepage, settings, http_clients, signatures)
    searches = providers.Singleton(make_searches, settings, http_clients, homepage.provider)  # in order
    intake_outcomes = providers.Singleton(IntakeOutcomes)  # the API's latest intake result, for /readyz
    readiness = providers.Singleton(Readiness, engine, work_queue, intake_outcomes)
    leases = providers.Singleton(SqlLeases, engine)
    migrate = providers.Callable(upgrade, engine)

    # POST /batches?dry_run=true: the price map is built on the first dry run with LLM questions
    # to price (the provider is passed, not called: litellm is imported then, not at start).
    batch_estimator = providers.Singleton(
        BatchEstimator, catalog=catalog, known=store, answers=store, history=store, pricing=pricing.provider,
        model=settings.provided.llm_model, llm_concurrency=settings.provided.llm_concurrency,
        job_size=settings.provided.max_domains_per_job, max_domains=settings.provided.max_domains_per_batch,
        precheck=settings.provided.precheck, precheck_max_age=providers.Callable(precheck_max_age, settings))

    # The HTTP API of `firmsift serve` and `firmsift api`, built anew on each call: call with the
    # address it will be served on (`host`), and, for serve, the embedded worker (`background`)
    # and the start-up checks that failed (`not_ready`); see http_api.create_app.
    api = providers.Factory(
        create_app, settings=settings, catalog=catalog, intake=intake, jobs=store, api_keys=api_keys,
        intake_outcomes=intake_outcomes, readiness=readiness, metrics=metrics, batch_intake=batch_intake,
        batches=batches, batch_replies=batch_replies, budgets=budgets, batch_estimator=batch_estimator,
    )

    # What a worker uses: each attempt waits for its slot in the per-minute budget, retries with
    # backoff wrap the attempts, and the metrics count and time whole calls.
    llm_retry_policy = providers.Singleton(
        RetryPolicy, attempts=settings.provided.llm_retry_attempts, base_delay=settings.provided.retry_base_delay,
        max_delay=settings.provided.retry_max_delay, deadline=settings.provided.llm_deadline,
        max_retry_after=settings.provided.max_retry_after)
    search_retry_policy = providers.Singleton(
        RetryPolicy, attempts=settings.provided.search_retry_attempts, base_delay=settings.provided.retry_base_delay,
        max_delay=settings.provided.retry_max_delay, deadline=settings.provided.search_deadline,
        max_retry_after=settings.provided.max_retry_after)
    llm_budget = providers.Singleton(RateBudget, settings.provided.llm_requests_per_minute)
    # None: each retry is logged; `firmsift eval` puts a RetryTally here to summarise them by cause.
    llm_retry_tally = providers.Object(None)
    worker_llm = providers.Singleton(MeteredLLM, providers.Singleton(
        RetryingLLM, providers.Singleton(RateLimitedLLM, llm, llm_budget), llm_retry_policy,
        tally=llm_retry_tally), metrics, pricing)
    worker_search = providers.Singleton(worker_search_chain, searches, search_retry_policy,
                                        settings.provided.search_requests_per_minute, metrics)
    worker_queue = providers.Singleton(MeteredQueue, work_queue, metrics)

    # A worker, built anew on each call: its own LLM slots, single flight and lease holder name,
    # over the process's store, queues, providers and metrics.
    job_dependencies = providers.Factory(
        JobDependencies, jobs=store, answers=store, known=store, search=worker_search, llm=worker_llm, pricing=pricing,
        catalog=catalog, llm_slots=providers.Factory(asyncio.Semaphore, settings.provided.llm_concurrency),
        domain_concurrency=settings.provided.domain_concurrency, on_result=metrics.provided.count_domain,
        leases=leases, lease_seconds=settings.provided.answer_lease_seconds,
        lease_holder=providers.Callable(lease_holder_name),
        precheck=providers.Singleton(worker_precheck, settings, resolver.provider, homepage.provider, signatures),
        spend_gate=budgets.provided.refusal_for_owner,
        evidence_reuse_age=settings.provided.evidence_reuse_age,
        on_evidence_reused=metrics.provided.count_evidence_reuse,
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

    # `firmsift eval`: evidence snapshots (call with a folder), the LLM response cache (call with
    # a file), model prices (call with per-model price overrides and the locally served models).
    eval_snapshots = providers.Factory(SnapshotFiles)
    eval_cache = providers.Factory(CompletionCacheFile)
    eval_pricing = providers.Factory(make_pricing)
    # The pre-check the eval runs once per labelled domain: the worker's resolver, homepage reader
    # and signatures (its cache time and redirect reuse concern stored answers, which an eval has none of).
    eval_precheck = providers.Singleton(Precheck, resolver, homepage, signatures)
