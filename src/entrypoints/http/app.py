"""The HTTP API (Starlette): submit a classification job, poll it, correct answers, check health,
describe itself."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from firmsift.adapters.decorators.prometheus_metrics import Metrics
from firmsift.adapters.readiness import IntakeOutcomes
from firmsift.domain.allowed_hosts import served_hosts
from firmsift.domain.errors import InvalidRequest, QueueUnavailable, Rejection
from firmsift.domain.job_document import accepted_document, job_document, warned
from firmsift.domain.model import Classifier, JobStatus
from firmsift.entrypoints.check_results import counts_as_ready
from firmsift.entrypoints.http.answers import answer_routes
from firmsift.entrypoints.http.auth import Gate, auth_required
from firmsift.entrypoints.http.batches import batch_routes
from firmsift.entrypoints.http.body_passes import BodyPasses
from firmsift.entrypoints.http.contract.requests import SubmitRequest
from firmsift.entrypoints.http.contract.validation import validated
from firmsift.entrypoints.http.header_limit import HeaderLimit
from firmsift.entrypoints.http.host_check import HostCheck
from firmsift.entrypoints.http.errors import EXCEPTION_HANDLERS, BackendUnavailable
from firmsift.entrypoints.http.json_body import read_json_body
from firmsift.entrypoints.http.openapi import openapi_document
from firmsift.entrypoints.http.rate_limit import TokenBuckets
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.web.routes import web_routes
from firmsift.entrypoints.web.security import SecurityHeaders
from firmsift.ports.database_errors import DatabaseFailure
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
from firmsift.services.submit import SubmitJob, find_job, submit_job

LOOPBACK = "127.0.0.1"  # where `firmsift serve` listens unless told otherwise
log = logging.getLogger(__name__)


class ReadinessChecks(Protocol):
    async def check(self) -> dict[str, Any]:
        """Each check's name and "ok" or what failed; never raises."""


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
    `process_checks` are this process's own checks beyond its backends (name: a call giving "ok",
    "degraded: why", which still counts as ready, or what failed), reported by /readyz.
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

    own_queues = {name for name in (settings.queue_name, settings.dead_letter_queue, settings.sqs_queue_url) if name}

    async def submit(request: Request) -> JSONResponse:
        caller = await gate.caller(request.headers, _address(request))  # before the body: strangers cost no parsing
        async with backend_deadline():
            await budgets.check(caller)  # 429 budget_exhausted, before the body too
        body = validated(SubmitRequest, await read_json_body(request, settings.max_body_bytes))
        reply_queue = request.headers.get("x-reply-queue")
        if reply_queue is not None and reply_queue.strip() in own_queues:
            # Replies there would be taken for jobs (or dropped as duplicates of them).
            raise InvalidRequest("invalid X-Reply-Queue", (Rejection(reply_queue, "is one of firmsift's own queues"),))
        command = SubmitJob(
            classifier=body.classifier,
            domains=body.domains,
            reply_queue=reply_queue,
            caller=caller,
            idempotency_key=request.headers.get("idempotency-key"),
        )
        try:
            async with backend_deadline():
                submission = await submit_job(
                    command,
                    catalog=catalog,
                    intake=intake,
                    max_domains=settings.max_domains_per_job,
                )
        except (QueueUnavailable, BackendUnavailable, DatabaseFailure):
            intake_outcomes.failed()  # /readyz says so until an intake succeeds again
            raise
        intake_outcomes.succeeded()
        job = submission.job
        headers = {"Location": f"/domains/classify/{job.id}"}
        if submission.replayed:
            # Same status as the first answer, so a retry after a lost response looks like it.
            headers["Idempotent-Replayed"] = "true"
        else:
            metrics.jobs_accepted.inc()
        return JSONResponse(warned(accepted_document(job), warning), status_code=202, headers=headers)

    @contextlib.asynccontextmanager
    async def backend_deadline() -> AsyncIterator[None]:
        """A partitioned database or queue answers nothing for minutes: answer 503 instead."""
        try:
            async with asyncio.timeout(settings.backend_timeout):
                yield
        except TimeoutError:
            raise BackendUnavailable(f"no answer from the database or queue within {settings.backend_timeout:g}s") from None

    async def poll(request: Request) -> JSONResponse:
        caller = await gate.caller(request.headers, _address(request))
        async with backend_deadline():
            job = await find_job(request.path_params["job_id"], caller.owner, jobs)
        return JSONResponse(warned(job_document(job), warning if job.status is JobStatus.PENDING else None))

    async def openapi(_request: Request) -> JSONResponse:
        return JSONResponse(document)

    async def healthz(_request: Request) -> JSONResponse:
        """Liveness: the process serves requests."""
        return JSONResponse({"status": "ok"})

    async def readyz(_request: Request) -> JSONResponse:
        """Readiness: the database answers and takes writes, the work queue answers, the
        latest intake did not fail, and (for `serve`) the embedded worker could start."""
        checks = {**await readiness.check(), **{name: check() for name, check in (process_checks or {}).items()}}
        # Degraded still serves: the pre-check concluding less (a lying resolver) is no reason to
        # take the process out of a load balancer.
        ready = all(counts_as_ready(result) for result in checks.values())
        return JSONResponse({"status": "ready" if ready else "not ready", "checks": checks},
                            status_code=200 if ready else 503)

    async def exposition(_request: Request) -> Response:
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if background is not None:
                await stack.enter_async_context(background())
            yield

    passes = BodyPasses()  # one for the API's and the web app's uploads alike
    routes = [
        *batch_routes(settings=settings, catalog=catalog, gate=gate, intake=batch_intake, batches=batches,
                      replies=batch_replies, own_queues=own_queues, deadline=backend_deadline,
                      budgets=budgets, estimator=batch_estimator, queue=work_queue, passes=passes, warning=warning),
        *answer_routes(catalog=catalog, gate=gate, store=human_answers, cached=cached_answers, batches=batches,
                       max_body_bytes=settings.max_body_bytes, deadline=backend_deadline),
        Route("/domains/classify", submit, methods=["POST"]),
        Route("/domains/classify/{job_id}", poll, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", exposition, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        *web_routes(settings=settings, catalog=catalog, gate=gate, intake=batch_intake, batches=batches,
                    replies=batch_replies, budgets=budgets, estimator=batch_estimator, known=known,
                    humans=human_answers, sessions=web_sessions, deadline=backend_deadline, queue=work_queue,
                    passes=passes, warning=warning, clock=clock),
    ]
    handlers = {**EXCEPTION_HANDLERS, ClientDisconnect: client_disconnected}
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan,
                     middleware=[Middleware(HeaderLimit, max_bytes=settings.max_header_bytes),
                                 Middleware(SecurityHeaders),  # on the 421 below too
                                 Middleware(HostCheck, allowed=allowed_hosts)])


async def client_disconnected(request: Request, _exc: Exception) -> Response:
    """The client went away before its request was read: its business, not an error of ours.
    The answer goes nowhere; it only ends the request quietly."""
    log.debug("client disconnected before its request was read", extra={"path": request.url.path})
    return Response(status_code=400)


def _address(request: Request) -> str:
    return request.client.host if request.client else ""

