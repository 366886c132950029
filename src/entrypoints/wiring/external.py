"""The wiring of the paid and outside providers: the LLM (paced, retried and metered for a worker),
its prices, the search providers in order, and the pre-check's DNS resolver, homepage reader and
signatures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dependency_injector import providers

from firmsift.adapters.decorators.pacing import PacedLLM
from firmsift.adapters.decorators.prometheus_metrics import MeteredLLM, MeteredSearch, Metrics
from firmsift.adapters.decorators.rate_budget import RateBudget, RateLimitedSearch
from firmsift.adapters.decorators.retrier import RetryPolicy
from firmsift.adapters.decorators.retrying import RetryingLLM, RetryingSearch
from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.adapters.llm.endpoint import api_base_host
from firmsift.adapters.memory.pacing import InMemoryPacing
from firmsift.adapters.sql.pacing import SqlPacing
from firmsift.domain.pacing import provider_key
from firmsift.entrypoints.wiring.lazy_adapters import (
    make_batch_pricing,
    make_batch_provider,
    make_estimate_batch_pricing,
    make_estimate_pricing,
    make_homepage,
    make_llm,
    make_resolver,
    make_searches,
    make_worker_pricing,
)
from firmsift.entrypoints.wiring.storage import StorageWiring
from firmsift.services.search_chain import SearchChain

if TYPE_CHECKING:
    from firmsift.ports.providers import Search


def worker_search_chain(searches: Sequence[Search], policy: RetryPolicy, requests_per_minute: float,
                        metrics: Metrics) -> SearchChain:
    """The search a worker uses: the configured providers asked in order, each behind its own
    rate budget (each attempt waits for a slot), its own retries with backoff wrapping the
    attempts, and its own metrics counting and timing whole calls."""
    return SearchChain([
        MeteredSearch(RetryingSearch(RateLimitedSearch(search, RateBudget(requests_per_minute)), policy), metrics)
        for search in searches
    ])


class ProviderWiring(StorageWiring):
    """The providers a worker pays for or reads from, and their prices."""

    settings, metrics, http_clients, engine = (
        StorageWiring.settings, StorageWiring.metrics, StorageWiring.http_clients, StorageWiring.engine)

    llm = providers.Singleton(make_llm, settings, http_clients)
    pricing = providers.Singleton(make_worker_pricing, settings)  # the configured model's token prices
    estimate_pricing = providers.Singleton(make_estimate_pricing, settings)  # the same, without litellm
    batch_pricing = providers.Singleton(make_batch_pricing, settings)  # the same, at the batch price (economy mode)
    estimate_batch_pricing = providers.Singleton(make_estimate_batch_pricing, settings)  # that, without litellm
    # Economy mode: the provider's batch API.
    batch_provider = providers.Singleton(make_batch_provider, settings, http_clients)
    # The pre-check's signatures (parking services, bot walls), DNS resolver and homepage reader;
    # the homepage reader is also the `homepage` search provider, so a page looked at is not
    # fetched again for evidence.
    signatures = providers.Singleton(load_signatures, settings.provided.signatures_dir)
    resolver = providers.Singleton(make_resolver, settings)
    homepage = providers.Singleton(make_homepage, settings, http_clients, signatures)
    searches = providers.Singleton(make_searches, settings, http_clients, homepage.provider)  # in order

    # What a worker uses: each attempt waits for its paced turn, retries with
    # backoff wrap the attempts, and the metrics count and time whole calls.
    llm_retry_policy = providers.Singleton(
        RetryPolicy, attempts=settings.provided.llm_retry_attempts, base_delay=settings.provided.retry_base_delay,
        max_delay=settings.provided.retry_max_delay, deadline=settings.provided.llm_deadline,
        max_retry_after=settings.provided.max_retry_after)
    search_retry_policy = providers.Singleton(
        RetryPolicy, attempts=settings.provided.search_retry_attempts, base_delay=settings.provided.retry_base_delay,
        max_delay=settings.provided.retry_max_delay, deadline=settings.provided.search_deadline,
        max_retry_after=settings.provided.max_retry_after)
    # LLM calls paced at the provider's limits as its headers announce them, the configured
    # rate a ceiling: one state per model and API host in the database, shared by every worker
    # process on it. local_pacing keeps it in the process: `firmsift eval` (which uses no
    # database) and the in-memory graph override llm_pacing with it.
    llm_pacing = providers.Singleton(SqlPacing, engine)
    local_pacing = providers.Singleton(InMemoryPacing)
    paced_llm = providers.Singleton(
        PacedLLM, llm, llm_pacing, ceiling=settings.provided.llm_requests_per_minute, metrics=metrics,
        key=providers.Callable(provider_key, settings.provided.llm_model,
                               providers.Callable(api_base_host, settings.provided.llm_api_base)))
    # None: each retry is logged; `firmsift eval` puts a RetryTally here to summarise them by cause.
    llm_retry_tally = providers.Object(None)
    worker_llm = providers.Singleton(MeteredLLM, providers.Singleton(
        RetryingLLM, paced_llm, llm_retry_policy,
        tally=llm_retry_tally), metrics, pricing)
    worker_search = providers.Singleton(worker_search_chain, searches, search_retry_policy,
                                        settings.provided.search_requests_per_minute, metrics)
