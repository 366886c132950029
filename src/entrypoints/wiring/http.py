"""The wiring of the HTTP API of `firmsift serve` and `firmsift api`, with the dry run's estimator."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from dependency_injector import providers

from firmsift.domain.estimates import WorkerPace
from firmsift.entrypoints.wiring.external import ProviderWiring
from firmsift.entrypoints.wiring.queues import QueueWiring
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.llm_calls_at_once import llm_concurrency
from firmsift.entrypoints.wiring.storage import StorageWiring
from firmsift.services.api import Api
from firmsift.services.batch_estimate import BatchEstimator

if TYPE_CHECKING:
    from starlette.applications import Starlette


def precheck_max_age(settings: Settings) -> timedelta | None:
    """How long a pre-check outcome counts as fresh: FIRMSIFT_PRECHECK_TTL_DAYS while the pre-check
    runs, never (None) while it is off (the worker's rule, JobDependencies.is_fresh)."""
    return timedelta(days=settings.precheck_ttl_days) if settings.precheck else None


def worker_pace(settings: Settings) -> WorkerPace:
    """What one worker runs at once, by the settings (the dry run's wall time rests on it): a batch
    job holds at most FIRMSIFT_MAX_DOMAINS_PER_JOB domains, of which FIRMSIFT_DOMAIN_CONCURRENCY run."""
    return WorkerPace(llm_concurrency(settings), settings.llm_requests_per_minute,
                      settings.worker_jobs * min(settings.domain_concurrency, settings.max_domains_per_job))


def create_api(application: Api, settings: Settings, **served: Any) -> Starlette:
    """The HTTP front door over `application` (http_app.py's create_app), served as `served` says
    (http/front_door.py's HttpFrontDoor), imported on the first call: the commands that serve no
    HTTP (worker, keys, answers, db, ...) do not import Starlette, the web app and the OpenAPI
    document."""
    from firmsift.entrypoints.http.front_door import HttpFrontDoor
    from firmsift.entrypoints.wiring.http_app import create_app

    return create_app(HttpFrontDoor(application, settings, **served))


class HttpWiring(QueueWiring, ProviderWiring):
    """The API's graph: the API itself is built anew on each call of `api`."""

    settings, metrics, store, catalog, answer_history = (
        StorageWiring.settings, StorageWiring.metrics, StorageWiring.store, StorageWiring.catalog,
        StorageWiring.answer_history)
    api_keys, human_answers, batches, budgets, web_sessions = (
        StorageWiring.api_keys, StorageWiring.human_answers, StorageWiring.batches, StorageWiring.budgets,
        StorageWiring.web_sessions)
    intake, intake_outcomes, readiness, batch_intake, batch_replies, work_queue = (
        QueueWiring.intake, QueueWiring.intake_outcomes, QueueWiring.readiness, QueueWiring.batch_intake,
        QueueWiring.batch_replies, QueueWiring.work_queue)
    estimate_pricing, estimate_batch_pricing = ProviderWiring.estimate_pricing, ProviderWiring.estimate_batch_pricing

    # POST /batches?dry_run=true: the price map file is read on the first dry run with LLM
    # questions to price (the provider is passed, not called); litellm is never imported for it.
    batch_estimator = providers.Singleton(
        BatchEstimator, catalog=catalog, known=store, answers=store, history=answer_history,
        pricing=estimate_pricing.provider, batch_pricing=estimate_batch_pricing.provider,
        model=settings.provided.llm_model, pace=providers.Callable(worker_pace, settings),
        job_size=settings.provided.max_domains_per_job, max_domains=settings.provided.max_domains_per_batch,
        precheck=settings.provided.precheck, precheck_max_age=providers.Callable(precheck_max_age, settings),
        human=human_answers)

    # What the API and the web app may do (services/api.py), one per container.
    api_application = providers.Singleton(
        Api, catalog=catalog, max_domains_per_job=settings.provided.max_domains_per_job, intake=intake, jobs=store,
        api_keys=api_keys, intake_health=intake_outcomes, readiness=readiness, metrics=metrics,
        batch_intake=batch_intake, batches=batches, batch_replies=batch_replies, budgets=budgets,
        estimator=batch_estimator, human_answers=human_answers, cached_answers=store, work_queue=work_queue,
        known=store, web_sessions=web_sessions)

    # The HTTP API of `firmsift serve` and `firmsift api`, built anew on each call: call with the
    # address it will be served on (`host`), and, for serve, the embedded worker (`background`)
    # and its own readiness checks (`process_checks`); see http/front_door.py.
    api = providers.Factory(create_api, application=api_application, settings=settings)
