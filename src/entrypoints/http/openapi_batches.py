"""The batch routes' part of the OpenAPI document: POST /batches, its progress, results and DELETE."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from firmsift.domain.economy import BatchMode
from firmsift.entrypoints.http.query_numbers import LARGEST_ROW_INDEX

JSON = "application/json"
CSV = "text/csv"
JSON_LINES = "application/x-ndjson"
RESULT_STATES = ["PENDING", "DONE", "FAILED", "CANCELLED", "REJECTED"]
DRY_RUN_PARAMETER = {
    "name": "dry_run", "in": "query", "required": False, "schema": {"type": "boolean", "default": False},
    "description": "true: answer 200 with what the batch would cost (BatchEstimate), recording nothing and "
                   "calling no provider; the counts are those the same request without it would accept"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def batch_paths(*, error: Callable[..., dict[str, Any]], security: dict[str, Any], auth_errors: dict[str, Any],
                intake_429: dict[str, Any], reply_queue_errors: dict[str, Any], headers: list[dict[str, Any]], too_large_headers: dict[str, Any],
                max_domains: int, max_body_bytes: int) -> dict[str, Any]:
    """The paths, sharing the jobs' security, auth errors and X-Reply-Queue / Idempotency-Key headers."""
    batch_id = {"name": "batch_id", "in": "path", "required": True, "schema": {"type": "string"}}
    not_found = error("no such batch for this caller, or not a batch id (batch_not_found)")
    integer = {"type": "integer", "minimum": 1}
    submit = {
        "summary": "Submit a list of domains (a JSON list or a CSV upload) to classify as one batch",
        "operationId": "submitBatch", **security,
        "parameters": [
            {"name": "classifier", "in": "query", "required": False, "schema": {"type": "string", "default": "cpg"},
             "description": "for a CSV upload (a JSON body names its classifier itself)"},
            {"name": "column", "in": "query", "required": False, "schema": {"type": "string", "minLength": 1},
             "description": "for a CSV upload (then required): the column holding the domains; each cell's first "
                            "host name is used, as `firmsift classify` does"},
            {"name": "mode", "in": "query", "required": False,
             "schema": {"enum": [m.value for m in BatchMode], "default": BatchMode.STANDARD.value},
             "description": "standard or economy (the provider's batch API: half the price, within 24 hours); "
                            "a JSON body's own `mode` comes first"},
            DRY_RUN_PARAMETER, *headers,
        ],
        "requestBody": {"required": True, "content": {
            JSON: {"schema": _ref("BatchRequest"), "example": {"classifier": "cpg", "domains": ["unilever.com"]}},
            CSV: {"schema": {"type": "string"}, "example": "Company,Website\r\nUnilever,https://www.unilever.com/\r\n"}}},
        "responses": {
            "200": {"description": "dry_run=true: what the batch would cost; nothing recorded",
                    "content": {JSON: {"schema": _ref("BatchEstimate")}}},
            "202": {"description": "accepted (or, for a repeated Idempotency-Key, the batch it accepted first)",
                    "headers": {"Location": {"schema": {"type": "string"}, "required": True},
                                "Idempotent-Replayed": {"schema": {"type": "string", "enum": ["true"]}}},
                    "content": {JSON: {"schema": _ref("BatchAccepted")}},
                    "links": {"GetBatch": {"operationId": "getBatch", "description": "follow the batch",
                                           "parameters": {"batch_id": "$response.body#/batch_id"}}}},
            "400": error("unreadable body: malformed_json, bad_csv (an unreadable CSV, or no such column: the "
                         "columns found are named), missing_column, empty_body, bad_content_length; "
                         "bad_dry_run (dry_run neither true nor false)"),
            **auth_errors, "429": intake_429, **reply_queue_errors,
            "413": error(f"body over {max_body_bytes} bytes (body_too_large), more than {max_domains} unique "
                         "domains or ten times as many rows (too_many_domains), a CSV header of more columns than "
                         "FIRMSIFT_MAX_CSV_COLUMNS (too_many_columns), or a row (a CSV record, a string of a JSON "
                         "list) of more characters than FIRMSIFT_MAX_ROW_CHARS (row_too_large)"),
            "415": error("Content-Type is neither JSON nor text/csv (unsupported_media_type)"),
            "422": error("invalid input: invalid_request, unknown_classifier, idempotency_key_reused"),
            "431": too_large_headers,
            "503": error("the batch could not be durably accepted (queue_unavailable, service_unavailable)",
                         **{"Retry-After": integer}),
        },
    }
    common = {**auth_errors, "404": not_found, "431": too_large_headers}
    progress = {"summary": "A batch's progress", "operationId": "getBatch", **security, "parameters": [batch_id],
                "responses": {"200": {"description": "the batch", "content": {JSON: {"schema": _ref("BatchProgress")}}},
                              **common}}
    results = {
        "summary": "One line per input row, in input order: the caller's values and the answer", **security,
        "operationId": "getBatchResults",
        "parameters": [batch_id, {"name": "format", "in": "query", "required": False,
                                  "schema": {"enum": ["jsonl", "csv"]},
                                  "description": "default jsonl, or csv when Accept names text/csv"},
                       {"name": "start", "in": "query", "required": False,
                        "schema": {"type": "integer", "minimum": 0, "maximum": LARGEST_ROW_INDEX},
                        "description": "the index of the first row to send (default 0): resumes a download"}],
        "responses": {
            "200": {"description": f"streamed; each line: the row's index (and CSV line), its input, "
                                   f"`classified_domain`, the job result's fields and `job_id`, status one of "
                                   f"{', '.join(RESULT_STATES)}. CSV: the input columns, then the answer "
                                   "columns (prefixed firmsift_ if a name clashes), answer cells made inert "
                                   "for spreadsheets",
                    "content": {JSON_LINES: {"schema": {"type": "string"}}, CSV: {"schema": {"type": "string"}}}},
            "400": error("format is neither jsonl nor csv (bad_format), or start is not a whole number from 0 to "
                         f"{LARGEST_ROW_INDEX} (bad_start; past the last row, no rows are sent)"), **common},
    }
    cancel = {"summary": "Cancel what has not started; work started or finished is kept", **security,
              "description": ("In economy mode, running jobs are cancelled too: their domains answered so far "
                              "are kept, and no question is sent to the provider's batch API after the cancel."),
              "operationId": "cancelBatch", "parameters": [batch_id],
              "responses": {"200": {"description": "the batch after cancelling",
                                    "content": {JSON: {"schema": _ref("BatchCancelled")}}}, **common}}
    retry = {"summary": "Retry the failed rows: their domains asked again on the cheapest path", **security,
             "operationId": "retryBatch", "parameters": [batch_id],
             "description": ("Failed domains (and jobs that failed as a whole, not cancelled ones) go back to the "
                             "work queue; answered domains are kept, nothing is paid for twice. A batch that was "
                             "cancelled is refused (409 batch_cancelled)."),
             "responses": {"200": {"description": "the batch after queueing its failed rows again",
                                   "content": {JSON: {"schema": _ref("BatchRetried")}}},
                           "409": error("the batch was cancelled (batch_cancelled)"),
                           "503": error("the work queue refused the retry (queue_unavailable): retry again"),
                           **common}}
    return {"/batches": {"post": submit}, "/batches/{batch_id}": {"get": progress, "delete": cancel},
            "/batches/{batch_id}/results": {"get": results}, "/batches/{batch_id}/retry": {"post": retry}}
