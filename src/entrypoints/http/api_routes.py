"""The JSON API's routes (Starlette): submit a classification job, poll it, batches, correct
answers, check health, describe itself. wiring/http_app.py serves them with the web app's."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from firmsift.domain.errors import InvalidRequest, Rejection
from firmsift.domain.job_document import accepted_document, job_document, warned
from firmsift.domain.model import JobStatus
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
from firmsift.ports.infrastructure_errors import DatabaseFailure, QueueUnavailable
from firmsift.services.api import Api
from firmsift.services.submit import SubmitJob

log = logging.getLogger(__name__)


def api_routes(
    api: Api,
    *,
    settings: Settings,
    gate: Gate,
    backend_deadline: Callable[[], AbstractAsyncContextManager[None]],
    passes: BodyPasses,
    document: Mapping[str, Any],
    process_checks: Mapping[str, Callable[[], str]] | None = None,
    warning: str | None = None,
) -> list[Route]:
    """The JSON API's routes over `api`, on the site's `gate` (keys, rate limits),
    `backend_deadline` and upload `passes`: jobs, batches, answers, health, readiness, metrics and
    the OpenAPI `document`. `process_checks` are this process's own checks beyond its backends,
    reported by /readyz; `warning` (no worker can run) is carried by every 202 and pending job."""
    own_queues = {name for name in (settings.queue_name, settings.dead_letter_queue, settings.sqs_queue_url) if name}

    async def submit(request: Request) -> JSONResponse:
        caller = await gate.caller(request.headers, _address(request))  # before the body: strangers cost no parsing
        async with backend_deadline():
            await api.budgets.check(caller)  # 429 budget_exhausted, before the body too
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
                submission = await api.submit(command)
        except (QueueUnavailable, BackendUnavailable, DatabaseFailure):
            api.intake_health.failed()  # /readyz says so until an intake succeeds again
            raise
        api.intake_health.succeeded()
        job = submission.job
        headers = {"Location": f"/domains/classify/{job.id}"}
        if submission.replayed:
            # Same status as the first answer, so a retry after a lost response looks like it.
            headers["Idempotent-Replayed"] = "true"
        else:
            api.metrics.jobs_accepted.inc()
        return JSONResponse(warned(accepted_document(job), warning), status_code=202, headers=headers)

    async def poll(request: Request) -> JSONResponse:
        caller = await gate.caller(request.headers, _address(request))
        async with backend_deadline():
            job = await api.find(request.path_params["job_id"], caller.owner)
        return JSONResponse(warned(job_document(job), warning if job.status is JobStatus.PENDING else None))

    async def openapi(_request: Request) -> JSONResponse:
        return JSONResponse(dict(document))

    async def healthz(_request: Request) -> JSONResponse:
        """Liveness: the process serves requests."""
        return JSONResponse({"status": "ok"})

    async def readyz(_request: Request) -> JSONResponse:
        """Readiness: the database answers and takes writes, the work queue answers, the
        latest intake did not fail, and (for `serve`) the embedded worker could start."""
        checks = {**await api.readiness.check(), **{name: check() for name, check in (process_checks or {}).items()}}
        # Degraded still serves: the pre-check concluding less (a lying resolver) is no reason to
        # take the process out of a load balancer.
        ready = all(counts_as_ready(result) for result in checks.values())
        return JSONResponse({"status": "ready" if ready else "not ready", "checks": checks},
                            status_code=200 if ready else 503)

    async def exposition(_request: Request) -> Response:
        body, content_type = api.metrics.exposition()
        return Response(body, media_type=content_type)

    return [
        *batch_routes(settings=settings, catalog=api.catalog, gate=gate, intake=api.batch_intake, batches=api.batches,
                      replies=api.batch_replies, own_queues=own_queues, deadline=backend_deadline,
                      budgets=api.budgets, estimator=api.estimator, queue=api.work_queue, passes=passes,
                      warning=warning),
        *answer_routes(catalog=api.catalog, gate=gate, store=api.human_answers, cached=api.cached_answers,
                       batches=api.batches, max_body_bytes=settings.max_body_bytes, deadline=backend_deadline),
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

