"""The composition root: settings -> adapters -> use-cases. The only module naming concrete adapters."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from dependency_injector import containers, providers
from pydantic import SecretStr

from firmsift.adapters.classifier_files import load_catalog
from firmsift.adapters.completion_cache_file import CompletionCacheFile
from firmsift.adapters.evidence_snapshot_files import SnapshotFiles
from firmsift.adapters.llm_endpoint import is_local_api_base
from firmsift.adapters.prometheus_metrics import MeteredLLM, MeteredQueue, MeteredSearch, Metrics
from firmsift.adapters.rate_budget import RateBudget, RateLimitedLLM, RateLimitedSearch
from firmsift.adapters.readiness import IntakeOutcomes, Readiness
from firmsift.adapters.retrying import RetryingLLM, RetryingSearch, RetryPolicy
from firmsift.adapters.sql_engine import make_engine
from firmsift.adapters.sql_job_intake import SqlJobIntake
from firmsift.adapters.sql_keys import SqlApiKeys
from firmsift.adapters.sql_leases import SqlLeases
from firmsift.adapters.sql_migrations import upgrade
from firmsift.adapters.sql_queue import SqlQueue, SqlReplyPublisher
from firmsift.adapters.sql_store import SqlStore
from firmsift.entrypoints.settings import Settings
from firmsift.services.submit import RecordThenPublish

if TYPE_CHECKING:
    from firmsift.ports.evaluation import Pricing
    from firmsift.ports.providers import LLM, Search
    from firmsift.ports.queue import ReplyPublisher, WorkQueue


LOCAL_SERVER_PLACEHOLDER_KEY = "no-key-required"


def make_llm(settings: Settings) -> LLM:
    # Imported here, not at the top: litellm costs seconds and ~120 MB, and the API never needs it.
    from firmsift.adapters.litellm_llm import LiteLLM

    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    if key is None and settings.llm_api_base and settings.llm_model.startswith("openai/"):
        # A local OpenAI-compatible server (llama.cpp, vLLM, Ollama) needs no key, but the
        # OpenAI client refuses to send a request without one.
        key = os.environ.get("OPENAI_API_KEY") or LOCAL_SERVER_PLACEHOLDER_KEY
    # A local server keeps generating for a request its client gave up on: retrying a timeout
    # there only queues the retry behind the abandoned work (see LiteLLM).
    return LiteLLM(settings.llm_model, api_base=settings.llm_api_base, api_key=key,
                   timeout=settings.llm_timeout, max_tokens=settings.llm_max_tokens,
                   response_format=settings.llm_response_format,
                   retry_timeouts=not is_local_api_base(settings.llm_api_base))


def make_pricing(overrides: dict[str, tuple[float, float]]) -> Pricing:
    from firmsift.adapters.litellm_pricing import LitellmPricing  # imports litellm: only when prices are asked

    return LitellmPricing(overrides)


def make_search(settings: Settings) -> Search:
    """The configured search provider; Settings has already checked its URL or key is set."""

    # Imported here: only a worker searches, and the API process must stay small (httpx, tldextract).
    from firmsift.adapters.brave_search import BraveSearch
    from firmsift.adapters.homepage_search import HomepageSearch
    from firmsift.adapters.searxng_search import SearxngSearch
    from firmsift.adapters.tavily_search import TavilySearch

    def secret(value: SecretStr | None) -> str:
        return value.get_secret_value() if value else ""

    common = {"timeout": settings.search_timeout, "max_results": settings.search_max_results}
    if settings.search_provider == "searxng":
        return SearxngSearch(settings.searxng_url or "", **common)
    if settings.search_provider == "tavily":
        return TavilySearch(secret(settings.tavily_api_key), base_url=settings.tavily_base_url, **common)
    if settings.search_provider == "brave":
        return BraveSearch(secret(settings.brave_api_key), base_url=settings.brave_base_url, **common)
    # Per request search_timeout; the whole fetch (both schemes, every redirect) within the
    # search deadline, so the homepage obeys the same settings as the search APIs.
    return HomepageSearch(timeout=settings.search_timeout, total_timeout=settings.search_deadline,
                          allow_private_addresses=settings.homepage_allow_private_addresses)


# SQS adapters are imported only when the SQS backend is chosen: boto3 costs time and memory.
def make_sqs_client(settings: Settings) -> object:
    from firmsift.adapters.sqs_client import make_sqs_client as build

    return build(endpoint_url=settings.sqs_endpoint_url, region=settings.aws_region)


def make_sqs_queue(client: object, queue: str, visibility_timeout: float) -> WorkQueue:
    """A work queue on SQS; also the dead-letter queue, which workers drain into FAILED jobs."""
    from firmsift.adapters.sqs_queue import SqsQueue

    return SqsQueue(client, queue, visibility_timeout=visibility_timeout)


def make_sqs_replies(client: object) -> ReplyPublisher:
    from firmsift.adapters.sqs_queue import SqsReplyPublisher

    return SqsReplyPublisher(client)


def ensure_declared_queues(client: object, settings: Settings, *, apply: bool) -> list[str]:
    """Create or update the queues declared in settings.queues_file (apply) or report drift."""
    from firmsift.adapters.sqs_queue_spec import ensure_queues, load_queue_spec, queue_drift

    spec = load_queue_spec(settings.queues_file)
    return ensure_queues(client, spec) if apply else queue_drift(client, spec)


class Container(containers.DeclarativeContainer):
    settings = providers.Dependency(instance_of=Settings)
    metrics = providers.Singleton(Metrics)

    engine = providers.Singleton(
        make_engine, settings.provided.database_url,
        pool_size=settings.provided.db_pool_size, max_overflow=settings.provided.db_max_overflow,
    )
    store = providers.Singleton(SqlStore, engine)
    api_keys = providers.Singleton(SqlApiKeys, engine)
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
    sqs_client = providers.Singleton(make_sqs_client, settings)
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
    catalog = providers.Singleton(load_catalog, settings.provided.classifiers_dir)
    llm = providers.Singleton(make_llm, settings)
    search = providers.Singleton(make_search, settings)
    intake_outcomes = providers.Singleton(IntakeOutcomes)  # the API's latest intake result, for /readyz
    readiness = providers.Singleton(Readiness, engine, work_queue, intake_outcomes)
    leases = providers.Singleton(SqlLeases, engine)
    migrate = providers.Callable(upgrade, engine)

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
    search_budget = providers.Singleton(RateBudget, settings.provided.search_requests_per_minute)
    # None: each retry is logged; `firmsift eval` puts a RetryTally here to summarise them by cause.
    llm_retry_tally = providers.Object(None)
    worker_llm = providers.Singleton(MeteredLLM, providers.Singleton(
        RetryingLLM, providers.Singleton(RateLimitedLLM, llm, llm_budget), llm_retry_policy,
        tally=llm_retry_tally), metrics)
    worker_search = providers.Singleton(MeteredSearch, providers.Singleton(
        RetryingSearch, providers.Singleton(RateLimitedSearch, search, search_budget), search_retry_policy), metrics)
    worker_queue = providers.Singleton(MeteredQueue, work_queue, metrics)

    # `firmsift eval`: evidence snapshots (call with a folder), the LLM response cache (call with
    # a file) and model prices (call with per-model price overrides).
    eval_snapshots = providers.Factory(SnapshotFiles)
    eval_cache = providers.Factory(CompletionCacheFile)
    eval_pricing = providers.Factory(make_pricing)
