"""One place mapping domain errors to HTTP statuses and the JSON error body of the contract."""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from firmsift.domain.batches import BatchCancelledAlready
from firmsift.domain.budgets import BudgetExhausted
from firmsift.domain.errors import (
    FirmsiftError,
    InvalidRequest,
    JobNotFound,
    TooManyDomains,
    UnknownClassifier,
)
from firmsift.domain.human_answers import HumanAnswerNotFound
from firmsift.domain.idempotency import IdempotencyKeyReused
from firmsift.domain.keys import InvalidApiKey, NotAuthenticated
from firmsift.domain.reply_queues import ReplyQueueNotAllowed
from firmsift.entrypoints.http.rate_limit import RateLimited
from firmsift.ports.infrastructure_errors import DatabaseFailure, DatabaseReadOnly, QueueUnavailable

log = logging.getLogger(__name__)
MAX_ECHOED_VALUE = 200  # an offending value is echoed back, but never a megabyte of it
MAX_DETAILS = 100  # offending values listed in one error; the rest are counted in details_omitted

_STATUS: list[tuple[type[FirmsiftError], int]] = [
    (TooManyDomains, 413),
    (InvalidRequest, 422),
    (UnknownClassifier, 422),
    (JobNotFound, 404),
    (BatchCancelledAlready, 409),
    (HumanAnswerNotFound, 404),
    (QueueUnavailable, 503),
    (NotAuthenticated, 401),
    (ReplyQueueNotAllowed, 403),
    (IdempotencyKeyReused, 422),
    (RateLimited, 429),
    (BudgetExhausted, 429),
]


class BodyRejected(FirmsiftError):
    """The request body itself is unusable: wrong type, too large, not JSON."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_body(code: str, message: str, details: list[dict[str, Any]] | None = None,
               omitted: int = 0) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "details": details or []}
    if omitted:
        error["details_omitted"] = omitted
    return {"error": error}


def _echo(value: object) -> object:
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int) and -10**15 < value < 10**15:
        return value
    text = value if isinstance(value, str) else repr(value)  # long integers, arrays, objects
    return text if len(text) <= MAX_ECHOED_VALUE else text[:MAX_ECHOED_VALUE] + "…"


def _invalid_request(exc: InvalidRequest, status: int) -> JSONResponse:
    """The first MAX_DETAILS offending values, each cut to MAX_ECHOED_VALUE: an error answer stays
    about the size of its request, however many values it refuses."""
    shown = exc.rejections[:MAX_DETAILS]
    details = [{"value": _echo(r.value), "reason": str(_echo(r.reason))} for r in shown]
    omitted = len(exc.rejections) - len(shown)
    message = f"{exc.message} (the first {len(shown)} are listed)" if omitted else exc.message
    return JSONResponse(error_body(exc.code, message, details, omitted), status_code=status)


async def firmsift_error(_request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, BodyRejected):
        return JSONResponse(error_body(exc.code, exc.message), status_code=exc.status)
    assert isinstance(exc, FirmsiftError)
    status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 400)
    if isinstance(exc, InvalidRequest):
        return _invalid_request(exc, status)
    if isinstance(exc, UnknownClassifier):
        details = [{"value": _echo(exc.name), "reason": f"known classifiers: {', '.join(exc.known)}"}]
        return JSONResponse(error_body(exc.code, str(exc), details), status_code=status)
    if isinstance(exc, NotAuthenticated):
        # RFC 6750: a 401 names the scheme; a key that was sent but refused is an invalid_token.
        challenge = 'Bearer error="invalid_token"' if isinstance(exc, InvalidApiKey) else "Bearer"
        return JSONResponse(error_body(exc.code, str(exc)), status_code=status,
                            headers={"WWW-Authenticate": challenge})
    if isinstance(exc, RateLimited):
        return JSONResponse(error_body(exc.code, str(exc)), status_code=status,
                            headers={"Retry-After": str(exc.retry_after)})
    if isinstance(exc, BudgetExhausted):
        body = error_body(exc.code, str(exc))
        body["error"].update(scope=exc.scope, limit_usd=exc.limit, spent_usd=exc.spent,
                             resets_at=exc.resets_at.isoformat())
        return JSONResponse(body, status_code=status, headers={"Retry-After": str(exc.retry_after)})
    if isinstance(exc, ReplyQueueNotAllowed):
        details = [{"value": _echo(exc.queue), "reason": "not one of this API key's reply queues"}]
        return JSONResponse(error_body(exc.code, str(exc), details), status_code=status)
    if isinstance(exc, IdempotencyKeyReused):
        details = [{"value": _echo(exc.key), "reason": f"already used for job {exc.job_id}"}]
        return JSONResponse(error_body(exc.code, str(exc), details), status_code=status)
    if isinstance(exc, QueueUnavailable):
        log.error("job not accepted: queue unavailable: %s", exc)
        return JSONResponse(error_body(exc.code, "the job could not be durably queued; try again later"),
                            status_code=status, headers={"Retry-After": "5"})
    return JSONResponse(error_body(exc.code, str(exc)), status_code=status)


class BackendUnavailable(Exception):
    """The database or the queue did not answer in time (a partition, an outage)."""


async def backend_unavailable(_request: Request, exc: Exception) -> JSONResponse:
    # The detail (host, driver message) is for the log only: the driver's error, as SQLAlchemy
    # reported it, where an adapter translated one.
    detail = exc.__cause__ or exc
    log.error("backend unavailable", extra={"error": f"{type(detail).__name__}: {detail}"})
    return JSONResponse(error_body("service_unavailable", "the database or queue is unavailable; try again later"),
                        status_code=503, headers={"Retry-After": "5"})


async def database_read_only(_request: Request, exc: Exception) -> JSONResponse:
    # The operator's fix is in the message (the file, the user, what to make writable): whoever
    # reads the 503 first can pass it on. Nothing of the request was stored.
    log.error("database read-only: %s", exc)
    return JSONResponse(error_body("database_read_only", str(exc)), status_code=503, headers={"Retry-After": "5"})


async def http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers)


async def unexpected_error(_request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error handling request", exc_info=exc)
    return JSONResponse(error_body("internal_error", "internal error; see the service log"), status_code=500)


EXCEPTION_HANDLERS = {
    FirmsiftError: firmsift_error,
    HTTPException: http_error,
    BackendUnavailable: backend_unavailable,
    DatabaseReadOnly: database_read_only,
    DatabaseFailure: backend_unavailable,  # a database outage is a 503, not an internal error
    Exception: unexpected_error,
}
