"""The HTTP front door as one ASGI app: the JSON API (entrypoints/http) and the web app
(entrypoints/web) on one gate, one backend deadline and one queue of upload passes, with their
middleware. Assembled here so that neither package imports the other's routes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect

from firmsift.adapters.decorators.prometheus_metrics import Metrics
from firmsift.adapters.readiness import IntakeOutcomes
from firmsift.domain.allowed_hosts import served_hosts
from firmsift.domain.model import Classifier
from firmsift.entrypoints.http.api_routes import ReadinessChecks, api_routes, client_disconnected
from firmsift.entrypoints.http.auth import Gate, auth_required
from firmsift.entrypoints.http.backend_deadline import backend_deadline
from firmsift.entrypoints.http.body_passes import BodyPasses
from firmsift.entrypoints.http.errors import EXCEPTION_HANDLERS
from firmsift.entrypoints.http.header_limit import HeaderLimit
from firmsift.entrypoints.http.host_check import HostCheck
from firmsift.entrypoints.http.openapi import openapi_document
from firmsift.entrypoints.http.rate_limit import TokenBuckets
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.web.routes import web_routes
from firmsift.entrypoints.web.security import SecurityHeaders
from firmsift.ports.batches import BatchIntake, BatchStore
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.ports.intake import JobIntake
from firmsift.ports.keys import ApiKeyStore
from firmsift.ports.queue import WorkQueue
from firmsift.ports.repository import ForgetsAnswers, JobRepository, KnownCompanies
from firmsift.ports.web_sessions import WebSessions
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batches import BatchReplies
from firmsift.services.budgets import Budgets

LOOPBACK = "127.0.0.1"  # where `firmsift serve` listens unless told otherwise


def create_app(
    *,
    settings: Settings,
    catalog: Mapping[str, Classifier],
    intake: JobIntake,
    jobs: JobRepository,
    api_keys: ApiKeyStore,
    intake_outcomes: IntakeOutcomes,
    readiness: ReadinessChecks,
    metrics: Metrics,
    batch_intake: BatchIntake,
    batches: BatchStore,
    batch_replies: BatchReplies,
    budgets: Budgets,
    batch_estimator: BatchEstimator,
    human_answers: HumanAnswerStore,
    cached_answers: ForgetsAnswers,
    work_queue: WorkQueue,
    known: KnownCompanies,
    web_sessions: WebSessions,
    background: Callable[[], AbstractAsyncContextManager[None]] | None = None,
    host: str = LOOPBACK,
    process_checks: Mapping[str, Callable[[], str]] | None = None,
    worker_problem: str | None = None,
    clock: Callable[[], float] | None = None,
) -> Starlette:
    """The ASGI app, on the parts the container gives it (Container.api builds it). `background`
    runs alongside it (the embedded worker of `firmsift serve`). `host` is the address it will be
    served on: it decides whether FIRMSIFT_AUTH=auto requires keys (looked up in `api_keys`), and
    UnsafeAuthSetting refuses FIRMSIFT_AUTH=off on an address other hosts can reach; without keys,
    it is one of the host names requests may name (FIRMSIFT_ALLOWED_HOSTS, http/host_check.py).
    `process_checks` are this process's own checks beyond its backends, reported by /readyz.
    `worker_problem` says why no worker can run (`serve` without LLM credentials): every 202, job
    and batch document and web page then carries it as `warning`, with the fix.
    The web app (entrypoints/web) is served at `/` on the same gate; `known` feeds its review queue;
    `clock` (a test's; else the real time) times its sign-in forms and their limit."""
    warning = f"no worker can run, so jobs wait in the queue: {worker_problem}" if worker_problem else None
    keys_required = auth_required(settings.auth, host)
    limiter = TokenBuckets(settings.rate_limit_per_minute) if keys_required and settings.rate_limit_per_minute else None
    failures = (TokenBuckets(settings.auth_failures_per_minute, holder="unknown API keys from this address")
                if keys_required and settings.auth_failures_per_minute else None)
    gate = Gate(api_keys if keys_required else None, limiter, failures)
    allowed_hosts = served_hosts(settings.allowed_hosts, host, keys_required)
    document = openapi_document(
        auth_required=keys_required, hosts_checked=allowed_hosts is not None, classifiers=catalog,
        max_domains=settings.max_domains_per_job,
        max_body_bytes=settings.max_body_bytes, max_header_bytes=settings.max_header_bytes,
        max_batch_domains=settings.max_domains_per_batch, max_batch_body_bytes=settings.max_batch_body_bytes,
    )
    deadline = backend_deadline(settings.backend_timeout)
    passes = BodyPasses()  # one for the API's and the web app's uploads alike

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if background is not None:
                await stack.enter_async_context(background())
            yield

    routes = [
        *api_routes(settings=settings, catalog=catalog, intake=intake, jobs=jobs, intake_outcomes=intake_outcomes,
                    readiness=readiness, metrics=metrics, batch_intake=batch_intake, batches=batches,
                    batch_replies=batch_replies, budgets=budgets, batch_estimator=batch_estimator,
                    human_answers=human_answers, cached_answers=cached_answers, work_queue=work_queue, gate=gate,
                    backend_deadline=deadline, passes=passes, document=document, process_checks=process_checks,
                    warning=warning),
        *web_routes(settings=settings, catalog=catalog, gate=gate, intake=batch_intake, batches=batches,
                    replies=batch_replies, budgets=budgets, estimator=batch_estimator, known=known,
                    humans=human_answers, sessions=web_sessions, deadline=deadline, queue=work_queue,
                    passes=passes, warning=warning, clock=clock),
    ]
    handlers = {**EXCEPTION_HANDLERS, ClientDisconnect: client_disconnected}
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan,
                     middleware=[Middleware(HeaderLimit, max_bytes=settings.max_header_bytes),
                                 Middleware(SecurityHeaders),  # on the 421 below too
                                 Middleware(HostCheck, allowed=allowed_hosts)])
