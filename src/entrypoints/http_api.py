"""The HTTP API (Starlette): submit a classification job, poll it, and check health."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from firmsift.domain.errors import InvalidRequest, JobNotFound, Rejection
from firmsift.domain.job_document import accepted_document, job_document
from firmsift.domain.submit import SubmitJob, parse_job_id, submit_job
from firmsift.entrypoints.container import Container
from firmsift.entrypoints.http_errors import EXCEPTION_HANDLERS
from firmsift.entrypoints.json_body import read_json_body

ALLOWED_FIELDS = frozenset({"classifier", "domains"})
DEFAULT_CLASSIFIER = "cpg"


def create_app(
    container: Container,
    *,
    background: Callable[[], AbstractAsyncContextManager[None]] | None = None,
) -> Starlette:
    """The ASGI app. `background` runs alongside it (the embedded worker of `firmsift serve`)."""
    settings = container.settings()

    async def submit(request: Request) -> JSONResponse:
        body = await read_json_body(request, settings.max_body_bytes)
        if not isinstance(body, dict):
            raise InvalidRequest("body must be a JSON object", (Rejection(_kind(body), "expected an object"),))
        unknown = sorted(set(body) - ALLOWED_FIELDS)
        if unknown:
            raise InvalidRequest("unknown fields in body", tuple(Rejection(k, "not a field; use classifier, domains") for k in unknown))
        if "domains" not in body:
            raise InvalidRequest("'domains' is required", (Rejection("domains", "missing"),))
        command = SubmitJob(
            classifier=body.get("classifier", DEFAULT_CLASSIFIER),
            domains=body["domains"],
            reply_queue=request.headers.get("x-reply-queue"),
        )
        job = await submit_job(
            command,
            catalog=container.catalog(),
            intake=container.intake(),
            max_domains=settings.max_domains_per_job,
        )
        container.metrics().jobs_accepted.inc()
        return JSONResponse(accepted_document(job), status_code=202, headers={"Location": f"/domains/classify/{job.id}"})

    async def poll(request: Request) -> JSONResponse:
        job_id = parse_job_id(request.path_params["job_id"])
        job = await container.store().get_job(job_id)
        if job is None:
            raise JobNotFound(job_id)
        return JSONResponse(job_document(job))

    async def healthz(_request: Request) -> JSONResponse:
        """Liveness: the process serves requests."""
        return JSONResponse({"status": "ok"})

    async def readyz(_request: Request) -> JSONResponse:
        """Readiness: the database and the work queue are reachable."""
        checks = await container.readiness().check()
        ready = all(result == "ok" for result in checks.values())
        return JSONResponse({"status": "ready" if ready else "not ready", "checks": checks},
                            status_code=200 if ready else 503)

    async def metrics(_request: Request) -> Response:
        body, content_type = container.metrics().exposition()
        return Response(body, media_type=content_type)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if background is not None:
                await stack.enter_async_context(background())
            yield

    routes = [
        Route("/domains/classify", submit, methods=["POST"]),
        Route("/domains/classify/{job_id}", poll, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers=EXCEPTION_HANDLERS, lifespan=lifespan)


def _kind(value: object) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(value), "null")
