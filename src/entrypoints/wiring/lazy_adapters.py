"""Adapters the container builds on demand, importing their SDKs (litellm, httpx, tldextract,
botocore) only then: a process that never asks for one does not pay its seconds and megabytes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING

from pydantic import SecretStr

from firmsift.adapters.llm.client_choice import uses_direct_client
from firmsift.adapters.llm.endpoint import OPENAI_API_BASE, OPENAI_KEY_VARIABLE, is_local_api_base
from firmsift.entrypoints.outbound_proxy import outbound_proxy
from firmsift.entrypoints.settings import Settings

if TYPE_CHECKING:
    from firmsift.adapters.search.brave import BraveSearch
    from firmsift.adapters.search.homepage import HomepageSearch
    from firmsift.adapters.search.searxng import SearxngSearch
    from firmsift.adapters.search.tavily import TavilySearch
    from firmsift.domain.site_signatures import Signatures
    from firmsift.ports.economy import BatchProvider
    from firmsift.ports.providers import LLM, Pricing, Search
    from firmsift.ports.queue import ReplyPublisher, WorkQueue
    from firmsift.ports.resolver import Resolver


LOCAL_SERVER_PLACEHOLDER_KEY = "no-key-required"


def uses_direct_llm_client(settings: Settings) -> bool:
    """Whether the configured model is served by the direct OpenAI-compatible client (no litellm
    import in the process) rather than litellm (FIRMSIFT_LLM_CLIENT; client_choice.py)."""
    return uses_direct_client(settings.llm_model, temperature=None, setting=settings.llm_client)  # no temperature set


def make_llm(settings: Settings, clients: contextlib.AsyncExitStack) -> LLM:
    """The LLM adapter of the settings: the direct client for OpenAI's chat completions, litellm
    for other providers (see uses_direct_llm_client). The HTTP client it reads answers through is
    made with it and closed when `clients` closes (see Container.http_clients)."""
    # Imported here, not at the top: litellm costs seconds and ~120 MB, and the API never needs it.
    if uses_direct_llm_client(settings):
        from firmsift.adapters.llm.openai_chat import OpenAIChat as Adapter
    else:
        from firmsift.adapters.llm.litellm_llm import LiteLLM as Adapter  # type: ignore[assignment]

    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    if key is None and settings.llm_api_base and settings.llm_model.startswith("openai/"):
        # A local OpenAI-compatible server (llama.cpp, vLLM, Ollama) needs no key, but the
        # OpenAI client refuses to send a request without one (the direct client sends it too).
        key = os.environ.get(OPENAI_KEY_VARIABLE) or LOCAL_SERVER_PLACEHOLDER_KEY
    # A local server keeps generating for a request its client gave up on: retrying a timeout
    # there only queues the retry behind the abandoned work (see LadderedLLM).
    llm = Adapter(settings.llm_model, api_base=settings.llm_api_base, api_key=key,
                  timeout=settings.llm_timeout, max_tokens=settings.llm_max_tokens,
                  response_format=settings.llm_response_format,
                  retry_timeouts=not is_local_api_base(settings.llm_api_base))
    clients.push_async_callback(llm.aclose)
    return llm


def make_pricing(overrides: dict[str, tuple[float, float]], unpriced: Collection[str] = ()) -> Pricing:
    """Prices from litellm's local map, `overrides` (USD per million tokens) first; models in
    `unpriced` (served locally) have none unless overridden."""
    from firmsift.adapters.llm.pricing import LitellmPricing  # imports litellm: only when prices are asked

    return LitellmPricing(overrides, unpriced)


def make_eval_pricing(overrides: dict[str, tuple[float, float]], unpriced: Collection[str] = (),
                      on_litellm: Collection[str] = ()) -> Pricing:
    """`firmsift eval`'s prices, by make_worker_pricing's rule: read from the map file when no
    candidate's model is served by litellm (`on_litellm`), so such a run never imports it (seconds
    of CPU at start); litellm's own map otherwise."""
    if on_litellm:
        return make_pricing(overrides, unpriced)
    from firmsift.adapters.llm.price_map import PriceMapPricing

    return PriceMapPricing(overrides, unpriced)


def _configured_prices(settings: Settings) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """The configured model's prices (USD per million tokens) if set, and the models without a
    price unless configured: the configured one when it runs on a local API base."""
    prices = settings.llm_prices
    local = is_local_api_base(settings.llm_api_base)
    return {} if prices is None else {settings.llm_model: prices}, [settings.llm_model] if local else []


def make_worker_pricing(settings: Settings) -> Pricing:
    """The prices of the worker's model: the configured ones, else litellm's map, except that a
    model on a local API base has no price unless configured (its cost is then unknown). With the
    direct client the map is read as a file (the same prices for OpenAI's chat models, checked by
    the tests), so a worker that never asks litellm never imports it."""
    if uses_direct_llm_client(settings):
        return make_estimate_pricing(settings)
    return make_pricing(*_configured_prices(settings))


def make_estimate_pricing(settings: Settings) -> Pricing:
    """The same prices for the API's dry run, read from litellm's price map file without
    importing litellm (which would cost the API process ~200 MB)."""
    from firmsift.adapters.llm.price_map import PriceMapPricing

    return PriceMapPricing(*_configured_prices(settings))


def make_batch_pricing(settings: Settings) -> Pricing:
    """What the worker's model costs through the provider's batch API (economy mode); read from
    the map file, as make_worker_pricing does, with the direct client."""
    if uses_direct_llm_client(settings):
        return make_estimate_batch_pricing(settings)
    from firmsift.adapters.llm.price_map import BatchPricing
    from firmsift.adapters.llm.pricing import LitellmPricing  # imports litellm

    return BatchPricing(LitellmPricing(*_configured_prices(settings)), settings.economy_price_factor)


def make_estimate_batch_pricing(settings: Settings) -> Pricing:
    """The same for the API's dry run, without importing litellm."""
    from firmsift.adapters.llm.price_map import BatchPricing, PriceMapPricing

    return BatchPricing(PriceMapPricing(*_configured_prices(settings)), settings.economy_price_factor)


def make_batch_provider(settings: Settings, clients: contextlib.AsyncExitStack) -> BatchProvider:
    """OpenAI's Batch API at the LLM's API base (OpenAI's own by default), with the LLM's key,
    asking the LLM's model; its HTTP client is closed when `clients` closes."""
    from firmsift.adapters.llm.openai_batches import OpenAIBatches
    from firmsift.adapters.llm.output_modes import modes_for

    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else os.environ.get(OPENAI_KEY_VARIABLE)
    batches = OpenAIBatches.opened(settings.llm_api_base or OPENAI_API_BASE, key, timeout=settings.llm_timeout,
                                   model=settings.llm_model, max_tokens=settings.llm_max_tokens,
                                   # No fallback within a batch: the most constrained format the setting allows.
                                   mode=modes_for(settings.llm_response_format)[0])
    clients.push_async_callback(batches.aclose)
    return batches


def make_searches(settings: Settings, clients: contextlib.AsyncExitStack,
                  homepage: Callable[[], Search]) -> tuple[Search, ...]:
    """The configured search providers, in the order they are asked (`homepage` gives the
    process's homepage reader, shared with the pre-check). Their HTTP clients are opened on first
    use, on the event loop that uses them, and closed when `clients` closes (see
    Container.http_clients)."""
    searches = []
    for provider in settings.search_providers:
        if provider == "homepage":
            searches.append(homepage())
            continue
        search = _search_adapter(settings, provider)
        clients.push_async_callback(search.aclose)
        searches.append(search)
    return tuple(searches)


def make_homepage(settings: Settings, clients: contextlib.AsyncExitStack, signatures: Signatures) -> HomepageSearch:
    """The homepage reader: a search provider, and the pre-check's look at the homepage.
    Per request search_timeout; the whole fetch (both schemes, every redirect) within the search
    deadline, so the homepage obeys the same settings as the search APIs."""
    from firmsift.adapters.search.homepage import HomepageSearch  # httpx and tldextract: workers only

    proxy, no_proxy = outbound_proxy(os.environ)
    homepage = HomepageSearch(timeout=settings.search_timeout, total_timeout=settings.search_deadline,
                              allow_private_addresses=settings.homepage_allow_private_addresses,
                              pinned=settings.pinned_hosts, proxy=proxy, no_proxy=no_proxy, signatures=signatures)
    clients.push_async_callback(homepage.aclose)
    return homepage


def make_resolver(settings: Settings) -> Resolver:
    """The pre-check's DNS resolver: the system's name servers, or FIRMSIFT_DNS_SERVERS."""
    from firmsift.adapters.dns.dnspython_resolver import DnspythonResolver  # dnspython: workers only

    return DnspythonResolver(nameservers=settings.dns_server_list, port=settings.dns_port,
                             timeout=settings.dns_timeout / 2, lifetime=settings.dns_timeout,
                             total_timeout=settings.dns_timeout * 1.5)


def _search_adapter(settings: Settings, provider: str) -> SearxngSearch | TavilySearch | BraveSearch:
    """The adapter of one configured provider; Settings has already checked its URL or key is set."""

    # Imported here: only a worker searches, and the API process must stay small (httpx, tldextract).
    from firmsift.adapters.search.brave import BraveSearch
    from firmsift.adapters.search.searxng import SearxngSearch
    from firmsift.adapters.search.tavily import TavilySearch

    def secret(value: SecretStr | None) -> str:
        return value.get_secret_value() if value else ""

    common = {"timeout": settings.search_timeout, "max_results": settings.search_max_results}
    if provider == "searxng":
        return SearxngSearch(settings.searxng_url or "", **common)
    if provider == "tavily":
        return TavilySearch(secret(settings.tavily_api_key), base_url=settings.tavily_base_url, **common)
    if provider == "brave":
        return BraveSearch(secret(settings.brave_api_key), base_url=settings.brave_base_url, **common)
    raise ValueError(f"no search adapter named {provider!r}")  # Settings checked the names already


# SQS adapters are imported only when the SQS backend is chosen: botocore costs time and memory.
def open_sqs_client(settings: Settings) -> Iterator[object]:
    """The SQS client, for the Resource provider: closed when the container's resources are shut down."""
    from firmsift.adapters.sqs.client import make_sqs_client

    client = make_sqs_client(endpoint_url=settings.sqs_endpoint_url, region=settings.aws_region)
    yield client
    client.close()


def make_sqs_queue(client: object, queue: str, visibility_timeout: float) -> WorkQueue:
    """A work queue on SQS; also the dead-letter queue, which workers drain into FAILED jobs."""
    from firmsift.adapters.sqs.queue import SqsQueue

    return SqsQueue(client, queue, visibility_timeout=visibility_timeout)


def make_sqs_replies(client: object) -> ReplyPublisher:
    from firmsift.adapters.sqs.queue import SqsReplyPublisher

    return SqsReplyPublisher(client)


def ensure_declared_queues(client: object, settings: Settings, *, apply: bool) -> list[str]:
    """Create or update the queues declared in settings.queues_file (apply) or report drift."""
    from firmsift.adapters.sqs.queue_spec import ensure_queues, load_queue_spec, queue_drift

    spec = load_queue_spec(settings.queues_file)
    return ensure_queues(client, spec) if apply else queue_drift(client, spec)
