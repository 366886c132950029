"""The OpenAPI 3.1 document served at /openapi.json: routes, parameters, headers, responses; bodies from contract/."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata
from typing import Any

from firmsift.domain.idempotency import MAX_KEY_LENGTH
from firmsift.domain.reply_queues import QUEUE_NAME_PATTERN, QUEUE_URL_PATTERN
from firmsift.entrypoints.http.contract.schemas import component_schemas
from firmsift.entrypoints.http.host_check import UNCHECKED_PATHS
from firmsift.entrypoints.http.openapi_answers import answer_paths
from firmsift.entrypoints.http.openapi_batches import batch_paths
from firmsift.services.submit import max_entries

JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _error(description: str, **headers: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": {JSON: {"schema": _ref("Error")}}}
    if headers:
        response["headers"] = {name: {"schema": schema, "required": True} for name, schema in headers.items()}
    return response


def _ok(description: str, schema: dict[str, Any], media_type: str = JSON) -> dict[str, Any]:
    return {"description": description, "content": {media_type: {"schema": schema}}}


def openapi_document(*, auth_required: bool, classifiers: Iterable[str], max_domains: int, max_body_bytes: int,
                     max_header_bytes: int, max_batch_domains: int, max_batch_body_bytes: int,
                     hosts_checked: bool = False) -> dict[str, Any]:
    """The document for an app with these settings (whether keys are required, which classifiers,
    whether the Host header is checked against FIRMSIFT_ALLOWED_HOSTS)."""
    too_large_headers = _error(f"request headers larger than {max_header_bytes} bytes (headers_too_large)")
    integer = {"type": "integer", "minimum": 1}
    security = {"security": [{"bearer": []}, {"apiKeyHeader": []}]} if auth_required else {}
    auth_errors = {
        "401": _error("no API key, or an unknown or revoked one (missing_api_key, invalid_api_key)",
                      **{"WWW-Authenticate": {"type": "string"}}),
        "429": _error("this key's request rate limit is used up (rate_limited)", **{"Retry-After": integer}),
    } if auth_required else {}
    # Without keys there is no rate limit, but the global spend limit still applies.
    intake_429 = _error(("this key's request rate limit is used up (rate_limited), or " if auth_required else "")
                        + "a daily spend limit is reached (budget_exhausted: the key's own or the global one, "
                        "until the next UTC midnight; the error names it with scope, limit_usd, spent_usd "
                        "and resets_at)", **{"Retry-After": integer})

    submit = {
        "summary": "Submit domains to classify", "operationId": "submitJob", **security,
        "parameters": [
            {"name": "X-Reply-Queue", "in": "header", "required": False,
             "description": "queue to publish the finished job to; with keys, one of the key's reply queues",
             "schema": {"type": "string", "pattern": f"^({QUEUE_NAME_PATTERN}|{QUEUE_URL_PATTERN})$"}},
            {"name": "Idempotency-Key", "in": "header", "required": False,
             "description": "a retry with the same key (per API key) returns the first job instead of a new one",
             "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH,
                        "pattern": "^[!-~]([ -~]*[!-~])?$"}},
        ],
        "requestBody": {"required": True, "content": {JSON: {
            "schema": _ref("SubmitRequest"),
            "example": {"classifier": "cpg", "domains": ["unilever.com", "https://www.jpmorganchase.com/"]}}}},
        "responses": {
            "202": {"description": "accepted (or, for a repeated Idempotency-Key, the job it accepted first)",
                    "headers": {"Location": {"schema": {"type": "string"}, "required": True},
                                "Idempotent-Replayed": {"schema": {"type": "string", "enum": ["true"]}}},
                    "content": {JSON: {"schema": _ref("Accepted")}},
                    "links": {"GetJob": {"operationId": "getJob", "description": "poll the job",
                                         "parameters": {"job_id": "$response.body#/job_id"}}}},
            "400": _error("body is not valid JSON (malformed_json)"),
            **auth_errors,
            "429": intake_429,
            "403": _error("this API key may not use that reply queue (reply_queue_not_allowed)"),
            "413": _error(f"body over {max_body_bytes} bytes (body_too_large), or more than {max_domains} "
                          f"unique domains or {max_entries(max_domains)} entries (too_many_domains)"),
            "415": _error("Content-Type is not JSON (unsupported_media_type)"),
            "422": _error("invalid input: invalid_request, invalid_domains, unknown_classifier, "
                          "idempotency_key_reused"),
            "431": too_large_headers,
            "503": _error("the job could not be durably queued (queue_unavailable), or the database is read-only "
                          "(database_read_only: the message names the file)", **{"Retry-After": integer}),
        },
    }
    if not auth_required:
        del submit["responses"]["403"]  # without keys every reply queue is allowed
    poll = {
        "summary": "A job's status and every domain finished so far", "operationId": "getJob", **security,
        "parameters": [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": {"200": _ok("the job", _ref("Job")), **auth_errors,
                      "404": _error("no such job for this caller, or not a job id (job_not_found)"),
                      "431": too_large_headers},
    }
    open_to_all = {"431": too_large_headers}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "firmsift", "version": metadata.version("firmsift"),
                 "description": "Classifies companies by web domain. /healthz, /readyz, /metrics and this "
                                "document need no API key."},
        "paths": {
            "/domains/classify": {"post": submit},
            "/domains/classify/{job_id}": {"get": poll},
            "/healthz": {"get": {"summary": "Liveness", "operationId": "healthz", "responses": {
                "200": _ok("serving", _ref("Health")), **open_to_all}}},
            "/readyz": {"get": {"summary": "Readiness: database and work queue", "operationId": "readyz",
                                "responses": {"200": _ok("ready", _ref("Readiness")),
                                              "503": _ok("a check failed", _ref("Readiness")), **open_to_all}}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "operationId": "metrics", "responses": {
                "200": _ok("Prometheus text exposition", {"type": "string"}, "text/plain"), **open_to_all}}},
            "/openapi.json": {"get": {"summary": "This document", "operationId": "openapi", "responses": {
                "200": _ok("OpenAPI 3.1", {"type": "object"}), **open_to_all}}},
            **batch_paths(error=_error, security=security, auth_errors=auth_errors, intake_429=intake_429,
                          reply_queue_errors={"403": submit["responses"]["403"]} if auth_required else {},
                          headers=submit["parameters"], too_large_headers=too_large_headers,
                          max_domains=max_batch_domains, max_body_bytes=max_batch_body_bytes),
            **answer_paths(error=_error, security=security, auth_errors=auth_errors,
                           too_large_headers=too_large_headers, max_body_bytes=max_body_bytes,
                           classifiers=sorted(classifiers)),
        },
        "components": {"schemas": component_schemas({
            "classifiers": sorted(classifiers), "max_domains": max_domains, "max_entries": max_entries(max_domains),
            "max_batch_domains": max_batch_domains})},
    }
    if hosts_checked:
        misdirected = _error("the Host header names no host this server answers for (host_not_allowed; "
                             "FIRMSIFT_ALLOWED_HOSTS)")
        unchecked = " and ".join(sorted(UNCHECKED_PATHS))
        document["info"]["description"] += (" A request whose Host header names no host this server answers for "
                                            f"gets 421 host_not_allowed, except at {unchecked}.")
        for path, operations in document["paths"].items():
            if path not in UNCHECKED_PATHS:
                for operation in operations.values():
                    operation["responses"]["421"] = misdirected
    if auth_required:
        document["components"]["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer fs_…"},
            "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        }
    return document
