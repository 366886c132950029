"""The wiring every graph starts from: the settings, clock, metrics and HTTP clients of a process,
the database with the stores on it, and the classifier definitions."""

from __future__ import annotations

import contextlib
import time

from dependency_injector import containers, providers

from firmsift.adapters.decorators.prometheus_metrics import Metrics
from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.sql.answer_history import SqlAnswerHistory
from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.deferred_questions import SqlDeferredQuestions
from firmsift.adapters.sql.engine import open_engine
from firmsift.adapters.sql.human_answers import SqlHumanAnswers
from firmsift.adapters.sql.keys import SqlApiKeys
from firmsift.adapters.sql.leases import SqlLeases
from firmsift.adapters.sql.migrations import is_current, upgrade
from firmsift.adapters.sql.spend import SqlSpendLedger
from firmsift.adapters.sql.sqlite_writes import write_state
from firmsift.adapters.sql.store import SqlStore
from firmsift.adapters.sql.web_sessions import SqlWebSessions
from firmsift.entrypoints.settings import Settings
from firmsift.services.budgets import Budgets


class StorageWiring(containers.DeclarativeContainer):
    """The process's basics and what is stored. The engine is a Resource, closed by
    `container.shutdown_resources()`; HTTP clients belong to the event loop that used them, so each
    is registered on `http_clients`, an exit stack that the code running that loop enters
    (`async with container.http_clients():`) and that closes them as it leaves."""

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
    migrate = providers.Callable(upgrade, engine)
    schema_is_current = providers.Callable(is_current, engine)
    # A worker probe's /readyz check on a SQLite file: "ok" or "read-only: what" (None: another database).
    database_writes = providers.Callable(write_state, engine)
    store = providers.Singleton(SqlStore, engine)
    answer_history = providers.Singleton(SqlAnswerHistory, engine)
    api_keys = providers.Singleton(SqlApiKeys, engine)
    # People's corrections (source `human`): used by every job before any other path.
    human_answers = providers.Singleton(SqlHumanAnswers, engine)
    # The web app's sessions, shared by every API process.
    web_sessions = providers.Singleton(SqlWebSessions, engine)
    # Daily spend limits: the key's own and FIRMSIFT_DAILY_SPEND_LIMIT_USD, against what finished today (UTC).
    spend_ledger = providers.Singleton(SqlSpendLedger, engine)
    budgets = providers.Singleton(Budgets, spend_ledger, api_keys, settings.provided.daily_spend_limit_usd)
    batches = providers.Singleton(SqlBatches, store)
    leases = providers.Singleton(SqlLeases, engine)
    # Economy mode: questions waiting for the provider's batch API.
    deferred_questions = providers.Singleton(SqlDeferredQuestions, engine)
    catalog = providers.Singleton(load_catalog, settings.provided.classifiers_dir)
