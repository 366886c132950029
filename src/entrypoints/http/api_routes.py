"""The JSON API's routes (Starlette): submit a classification job, poll it, batches, correct
answers, check health, describe itself. wiring/http_app.py serves them with the web app's."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from firmsift.adapters.decorators.prometheus_metrics import Metrics
from firmsift.adapters.readiness import IntakeOutcomes
from firmsift.domain.errors import InvalidRequest, QueueUnavailable, Rejection
from firmsift.domain.job_document import accepted_document, job_document, warned
from firmsift.domain.model import Classifier, JobStatus
from firmsift.entrypoints.check_results import counts_as_ready
from firmsift.entrypoints.http.answers import answer_routes
from firmsift.entrypoints.http.auth import Gate
from firmsift.entrypoints.http.batches import batch_routes
from firmsift.entrypoints.http.body_passes import BodyPasses
from firmsift.entrypoints.http.contract.requests import SubmitRequest
from firmsift.entrypoints.http.contract.validation import validated
from firmsift.entrypoints.http.errors import BackendUnavailable
from firmsift.entrypoints.http.json_body import read_json_body
from firmsift.entrypoints.settings import Settings
from firmsift.ports.database_errors import DatabaseFailure
from firmsift.ports.batches import BatchIntake, BatchStore
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.ports.intake import JobIntake
from firmsift.ports.queue import WorkQueue
from firmsift.ports.repository import ForgetsAnswers, JobRepository
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batches import BatchReplies
from firmsift.services.budgets import Budgets
from firmsift.services.submit import SubmitJob, find_job, submit_job

log = logging.getLogger(__name__)


class ReadinessChecks(Protocol):
    async def check(self) -> dict[str, Any]:
        """Each check's name and "ok" or what failed; never raises."""


def api_routes(
    *,
    settings: Settings,
    catalog: Mapping[str, Classifier],
    intake: JobIntake,
    jobs: JobRepository,
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
    gate: Gate,
    backend_deadline: Callable[[], AbstractAsyncContextManager[None]],
    passes: BodyPasses,
    document: Mapping[str, Any],
    process_checks: Mapping[str, Callable[[], str]] | None = None,
    warning: str | None = None,
) -> list[Route]:
    """The JSON API's routes on the site's `gate` (keys, rate limits), `backend_deadline` and
    upload `passes`: jobs, batches, answers, health, readiness, metrics and the OpenAPI `document`.
    `process_checks` are this process's own checks beyond its backends (name: a call giving "ok",
    "degraded: why", which still counts as ready, or what failed), reported by /readyz. `warning`
    (no worker can run) is carried by every 202 and pending job document."""
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

    async def poll(request: Request) -> JSONResponse:
        caller = await gate.caller(request.headers, _address(request))
        async with backend_deadline():
            job = await find_job(request.path_params["job_id"], caller.owner, jobs)
        return JSONResponse(warned(job_document(job), warning if job.status is JobStatus.PENDING else None))

    async def openapi(_request: Request) -> JSONResponse:
        return JSONResponse(dict(document))

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

    return [
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
    ]


async def client_disconnected(request: Request, _exc: Exception) -> Response:
    """The client went away before its request was read: its business, not an error of ours.
    The answer goes nowhere; it only ends the request quietly."""
    log.debug("client disconnected before its request was read", extra={"path": request.url.path})
    return Response(status_code=400)


def _address(request: Request) -> str:
    return request.client.host if request.client else ""

