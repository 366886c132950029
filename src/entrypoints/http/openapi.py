"""The OpenAPI 3.1 document served at /openapi.json: every route, header, body, response and error."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import metadata
from typing import Any

from firmsift.domain.idempotency import MAX_KEY_LENGTH
from firmsift.domain.model import QuoteStatus, Source
from firmsift.domain.quotes import MAX_QUOTE_CHARS
from firmsift.domain.site_status import SiteStatus
from firmsift.domain.reply_queues import QUEUE_NAME_PATTERN, QUEUE_URL_PATTERN
from firmsift.entrypoints.http.errors import MAX_DETAILS
from firmsift.entrypoints.http.openapi_batches import batch_paths, batch_schemas
from firmsift.entrypoints.http.openapi_costs import (
    BUDGET_ERROR_PROPERTIES,
    JOB_TOTAL,
    RESULT_COST_FIELDS,
    RESULT_COST_PROPERTIES,
)
from firmsift.services.submit import max_entries

JSON = "application/json"
STATUSES = ["PENDING", "RUNNING", "DONE", "FAILED"]
RESULT_STATUSES = ["PENDING", "DONE", "FAILED"]
SOURCES = [source.value for source in Source]
QUOTE_STATUSES = [status.value for status in QuoteStatus]
SITE_STATUSES = [status.value for status in SiteStatus]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _error(description: str, **headers: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": {JSON: {"schema": _ref("Error")}}}
    if headers:
        response["headers"] = {name: {"schema": schema, "required": True} for name, schema in headers.items()}
    return response


def _ok(description: str, schema: dict[str, Any], media_type: str = JSON) -> dict[str, Any]:
    return {"description": description, "content": {media_type: {"schema": schema}}}


def _schemas(classifiers: list[str], max_domains: int, max_details: int) -> dict[str, Any]:
    nullable_string = {"type": ["string", "null"]}
    return {
        "Error": {
            "type": "object", "required": ["error"], "additionalProperties": False,
            "properties": {"error": {
                "type": "object", "required": ["code", "message", "details"], "additionalProperties": False,
                "properties": {
                    "code": {"type": "string", "description": "machine-readable, e.g. invalid_domains"},
                    "message": {"type": "string"},
                    "details": {"type": "array", "items": {
                        "type": "object", "required": ["value", "reason"], "additionalProperties": False,
                        "properties": {"value": {"description": "the offending input (long values are cut)"},
                                       "reason": {"type": "string"}}},
                                "maxItems": max_details, "description": f"the first {max_details} offending values"},
                    "details_omitted": {"type": "integer", "minimum": 1,
                                        "description": "offending values not listed, when there are more"},
                    **BUDGET_ERROR_PROPERTIES,
                }}},
        },
        "SubmitRequest": {
            "type": "object", "required": ["domains"], "additionalProperties": False,
            "properties": {
                "classifier": {"type": "string", "enum": classifiers, "default": "cpg"},
                "domains": {"type": "array", "minItems": 1, "maxItems": max_entries(max_domains),
                            "items": {"type": "string", "minLength": 1},
                            "description": f"host names or URLs; normalized, duplicates removed; at most "
                                           f"{max_domains} unique ones and {max_entries(max_domains)} entries "
                                           "(413 too_many_domains); each invalid one is listed in a 422 "
                                           "invalid_domains error"},
            },
        },
        "Accepted": {
            "type": "object", "required": ["job_id", "status", "classifier", "domains"], "additionalProperties": False,
            "properties": {"job_id": {"type": "string", "format": "uuid"}, "status": {"enum": STATUSES},
                           "classifier": {"type": "string"},
                           "domains": {"type": "array", "items": {"type": "string"}}},
        },
        "Result": {
            "type": "object", "additionalProperties": False,
            "required": ["domain", "status", "answer", "confidence", "reason", "source", "evidence",
                         "evidence_status", "search_provider", "evidence_reused_from", "evidence_searched_at", "quote", "quote_status", "site_status",
                         "redirected_to", "redirected_answer", "error", *RESULT_COST_FIELDS],
            "properties": {
                "domain": {"type": "string"}, "status": {"enum": RESULT_STATUSES},
                "answer": {"type": ["boolean", "null"]},
                "confidence": {"type": ["integer", "null"], "minimum": 1, "maximum": 5},
                "reason": {"type": "string"}, "source": {"enum": [*SOURCES, None]},
                "evidence": {"type": "array", "items": {
                    "type": "object", "required": ["url", "title"], "additionalProperties": False,
                    "properties": {"url": {"type": "string"}, "title": {"type": "string"}}}},
                "evidence_status": {**nullable_string, "description": (
                    "how the search for evidence went: `found`, `none: the search found nothing` or "
                    "`none: <why it failed>`; null where no search ran (known company, pending)")},
                "search_provider": {**nullable_string, "description": (
                    "the search provider whose evidence the answer used (`homepage`, `searxng`, `tavily` "
                    "or `brave`: the first of a chain that found useful evidence); null where it used none "
                    "(no search, nothing found, every provider failed) or was answered before it was recorded")},
                "evidence_reused_from": {**nullable_string, "description": (
                    "the classifier whose recent answer for this domain lent its evidence (stored, as sent "
                    "then) instead of a new search, within FIRMSIFT_EVIDENCE_REUSE_DAYS; `evidence_status` "
                    "and `search_provider` are that search's; null where the evidence was searched for "
                    "this answer, or no search ran")},
                "evidence_searched_at": {"type": ["string", "null"], "format": "date-time", "description": (
                    "for reused evidence: when the search that found it ran; null otherwise")},
                "quote": {**nullable_string, "maxLength": MAX_QUOTE_CHARS, "description": (
                    "the passage of the evidence the model quoted for its answer (untrusted text, cut to "
                    f"{MAX_QUOTE_CHARS} characters); null when it gave none or no LLM answered")},
                "quote_status": {"enum": [*QUOTE_STATUSES, None], "description": (
                    "whether the quote was found in the evidence sent to the model: `verified`; "
                    "`unverified` (not found, or too short or long to count), `no_quote` or `no_evidence` "
                    "keep the confidence at 2 at most and the answer cached 30 days at most; null where no "
                    "LLM answered (known company, pending, failed) or for answers stored before quotes")},
                "site_status": {"enum": [*SITE_STATUSES, None], "description": (
                    "what the pre-check found before any LLM call: `live`, `no_dns`, `unreachable` or "
                    "`parked` (these three end the domain with answer null, source `precheck`, and the "
                    "reason), `blocked` (a bot wall: evidence comes from the next search provider), "
                    "`redirected` (to another site, named in `redirected_to`), `unknown` (the DNS lookup "
                    "failed: nothing concluded, the LLM is asked); null where no pre-check "
                    "ran (known company, pre-check off, answers stored before it)")},
                "redirected_to": {**nullable_string, "description": (
                    "for `redirected`: the registrable domain the homepage leads to")},
                "redirected_answer": {"type": ["boolean", "null"], "description": (
                    "for `redirected`: the fresh answer the target already had for this classifier "
                    "(reused as this domain's answer only when the operator turned that on); null "
                    "when it had none")},
                "error": nullable_string,
                **RESULT_COST_PROPERTIES,
            },
        },
        "Job": {
            "type": "object", "required": ["job_id", "classifier", "status", "created_at", "results", "total"],
            "additionalProperties": False,
            "properties": {"job_id": {"type": "string", "format": "uuid"}, "classifier": {"type": "string"},
                           "status": {"enum": STATUSES}, "created_at": {"type": "string", "format": "date-time"},
                           "results": {"type": "array", "items": _ref("Result")}, "total": JOB_TOTAL,
                           "error": {"type": "string", "description": "why the whole job failed"}},
        },
    }


def openapi_document(*, auth_required: bool, classifiers: Iterable[str], max_domains: int, max_body_bytes: int,
                     max_header_bytes: int, max_batch_domains: int, max_batch_body_bytes: int) -> dict[str, Any]:
    """The document for an app with these settings (whether keys are required, which classifiers)."""
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
            "503": _error("the job could not be durably queued (queue_unavailable)", **{"Retry-After": integer}),
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
                "200": _ok("serving", {"type": "object", "required": ["status"], "additionalProperties": False,
                                       "properties": {"status": {"const": "ok"}}}), **open_to_all}}},
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
        },
        "components": {"schemas": {**_schemas(sorted(classifiers), max_domains, MAX_DETAILS),
                                    **batch_schemas(sorted(classifiers), max_batch_domains), "Readiness": {
            "type": "object", "required": ["status", "checks"], "additionalProperties": False,
            "properties": {"status": {"enum": ["ready", "not ready"]},
                           "checks": {"type": "object", "additionalProperties": {"type": "string"}}}}}},
    }
    if auth_required:
        document["components"]["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer fs_…"},
            "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
        }
    return document
