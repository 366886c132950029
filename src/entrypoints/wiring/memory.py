"""The production graph on in-memory adapters: firmsift in one process, with no database, no
network and no provider account. The unit tests' harness, and a way to read the whole system."""

from __future__ import annotations

from dependency_injector import providers

from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.economy import InMemoryBatchProvider, InMemoryDeferredQuestions
from firmsift.adapters.memory.homepage import InMemoryHomepage
from firmsift.adapters.memory.human_answers import InMemoryHumanAnswers
from firmsift.adapters.memory.keys import InMemoryApiKeys
from firmsift.adapters.memory.leases import InMemoryLeases
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.adapters.memory.queue import InMemoryQueue, InMemoryReplyPublisher
from firmsift.adapters.memory.readiness import InMemoryReadiness
from firmsift.adapters.memory.resolver import InMemoryResolver
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.adapters.memory.web_sessions import InMemoryWebSessions
from firmsift.domain.site_facts import DnsFacts, DnsOutcome
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.settings import Settings
from firmsift.services.batch_intake import RecordBatchThenPublish
from firmsift.services.submit import RecordThenPublish

# Every name the in-memory DNS is not told about has this (documentation) address, and every
# homepage answers a plain page: the pre-check finds each domain live unless a test says otherwise.
ANY_NAME = DnsFacts(DnsOutcome.ANSWERED, addresses=("198.51.100.7",))


def in_memory_container(settings: Settings | None = None) -> Container:
    """The Container, with its adapters overridden by in-memory ones: store, batches, API keys, human
    answers, web sessions, work and dead-letter queue, replies, answer leases, LLM pacing, readiness, a scripted LLM and search (that
    record their calls), fixed prices, and the pre-check's DNS and homepage (every domain live
    unless a test adds records: `container.resolver().add(...)`, `container.homepage().add(...)`).
    Everything above them (the HTTP API of `container.api()`, the worker with its retries, rate budgets and metrics, the use-cases) is the production wiring.

    A test that varies one dependency overrides its provider before resolving anything, e.g.
    `container.llm.override(ScriptedLLM(reply, delay=1.0))`. The queue, the leases and the worker
    share the `clock` provider: a test on a virtual-time event loop overrides it with the loop's.
    The database-only providers (engine, migrate, reply_reader) and the SQS ones have no in-memory
    counterpart.
    """
    container = Container(settings=settings or Settings())
    configured = container.settings.provided
    container.override_providers(
        store=providers.Singleton(InMemoryStore),
        api_keys=providers.Singleton(InMemoryApiKeys),
        human_answers=providers.Singleton(InMemoryHumanAnswers),
        web_sessions=providers.Singleton(InMemoryWebSessions),
        spend_ledger=container.store,
        answer_history=container.store,
        work_queue=providers.Singleton(
            InMemoryQueue, configured.queue_name, visibility_timeout=configured.visibility_timeout,
            max_receives=configured.max_receives, dead_letter_queue=configured.dead_letter_queue,
            clock=container.clock,
        ),
        # Where the in-memory queue moves a message received max_receives times.
        dead_letters=container.work_queue.provided.dead_letters,
        intake=providers.Singleton(RecordThenPublish, container.store, container.work_queue),
        batches=providers.Singleton(InMemoryBatches, container.store),
        batch_intake=providers.Singleton(RecordBatchThenPublish, container.batches, container.store,
                                         container.work_queue),
        replies=providers.Singleton(InMemoryReplyPublisher),
        leases=providers.Singleton(InMemoryLeases, clock=container.clock),
        llm_pacing=container.local_pacing,
        readiness=providers.Singleton(InMemoryReadiness, container.intake_outcomes),
        llm=providers.Singleton(ScriptedLLM),
        pricing=providers.Singleton(FixedPricing, 1.0, 2.0),  # USD per million tokens in and out, any model
        estimate_pricing=container.pricing,  # the dry run prices as the worker does
        batch_pricing=providers.Singleton(FixedPricing, 0.5, 1.0),  # half that through the batch API
        estimate_batch_pricing=container.batch_pricing,
        deferred_questions=providers.Singleton(InMemoryDeferredQuestions, container.batches),
        batch_provider=providers.Singleton(InMemoryBatchProvider),
        searches=providers.List(providers.Singleton(StaticSearch)),  # a chain of one provider, `static`
        resolver=providers.Singleton(InMemoryResolver, default=ANY_NAME),
        homepage=providers.Singleton(InMemoryHomepage),
    )
    return container
