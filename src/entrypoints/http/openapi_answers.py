"""The answer routes' part of the OpenAPI document: PUT and DELETE /answers/{classifier}/{domain}
(correct, undo), GET /answers (list, export) and POST /answers/forget (forget cached answers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from firmsift.domain.human_answer_documents import CSV_COLUMNS
from firmsift.entrypoints.http.answers import DEFAULT_PAGE, MAX_PAGE

JSON = "application/json"
CSV = "text/csv"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def answer_paths(*, error: Callable[..., dict[str, Any]], security: dict[str, Any], auth_errors: dict[str, Any],
                 too_large_headers: dict[str, Any], max_body_bytes: int, classifiers: list[str]) -> dict[str, Any]:
    key = [{"name": "classifier", "in": "path", "required": True, "schema": {"enum": classifiers}},
           {"name": "domain", "in": "path", "required": True, "schema": {"type": "string"},
            "description": "a host name; normalized as every domain is"}]
    common = {**auth_errors, "431": too_large_headers}
    invalid = error("invalid input: invalid_request (a bad domain, answer or note, each listed), unknown_classifier")
    put = {
        "summary": "Correct the answer for a domain (a human answer)", "operationId": "setHumanAnswer", **security,
        "description": ("Every later job and batch for (domain, classifier) answers from it: source `human`, "
                        "confidence 5, the note as the reason; no LLM call, and nothing the worker writes "
                        "replaces or expires it. Shared by every API key; records the key that set it."),
        "parameters": key,
        "requestBody": {"required": True, "content": {JSON: {"schema": _ref("HumanAnswerRequest"), "example": {
            "answer": False, "note": "a bank: sells no consumer goods"}}}},
        "responses": {"200": {"description": "stored", "content": {JSON: {"schema": _ref("HumanAnswerSet")}}},
                      "400": error("body is not valid JSON (malformed_json)"),
                      "413": error(f"body over {max_body_bytes} bytes (body_too_large)"),
                      "415": error("Content-Type is not JSON (unsupported_media_type)"),
                      "422": invalid, **common},
    }
    delete = {
        "summary": "Undo the latest correction of a domain", "operationId": "undoHumanAnswer", **security,
        "description": "Removes the current human answer and restores what it replaced: an earlier one, or none.",
        "parameters": key,
        "responses": {"200": {"description": "undone", "content": {JSON: {"schema": _ref("HumanAnswerUndone")}}},
                      "404": error("no human answer to undo (human_answer_not_found)"),
                      "422": invalid, **common},
    }
    listing = {
        "summary": "List or export human answers", "operationId": "listHumanAnswers", **security,
        "parameters": [
            {"name": "classifier", "in": "query", "required": False, "schema": {"enum": classifiers},
             "description": "only this classifier's (default: every classifier's)"},
            {"name": "source", "in": "query", "required": False, "schema": {"enum": ["human"], "default": "human"},
             "description": "the answers listed: those people set"},
            {"name": "format", "in": "query", "required": False, "schema": {"enum": ["json", "csv"], "default": "json"},
             "description": f"json: a page at a time; csv: all of them (after `after` when given), columns {', '.join(CSV_COLUMNS)} "
                            "(what `firmsift answers import` reads)"},
            {"name": "limit", "in": "query", "required": False,
             "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": DEFAULT_PAGE},
             "description": "answers per JSON page (CSV has them all)"},
            {"name": "after", "in": "query", "required": False, "schema": {"type": "string", "pattern": "^[^/]+/[^/]+$"},
             "description": "the `next` of the previous page: start after it"},
        ],
        "responses": {"200": {"description": "by classifier, then domain", "content": {
            JSON: {"schema": _ref("HumanAnswerPage")}, CSV: {"schema": {"type": "string"}}}},
            "400": error("a bad query value (bad_source, bad_format, bad_limit, bad_cursor)"),
            "422": error("unknown_classifier"), **common},
    }
    forget = {
        "summary": "Forget cached answers, so the next job asks again", "operationId": "forgetAnswers", **security,
        "description": ("For some domains, for every domain of one of your batches, or for all of a classifier's "
                        "cached answers; every cached answer or, with only=precheck, only the pre-check's outcomes "
                        "(no_dns, unreachable, parked). Human answers are kept. Shared by every API key, as "
                        "answers are. `firmsift forget` does the same from the command line."),
        "requestBody": {"required": True, "content": {JSON: {"schema": _ref("ForgetRequest"), "examples": {
            "domains": {"value": {"classifier": "cpg", "domains": ["unilever.com"]}},
            "batch": {"value": {"batch_id": "0f8c2a7e-8f9b-4f1e-9b1a-2d5b8c7e6a10", "only": "precheck"}}}}}},
        "responses": {"200": {"description": "forgotten", "content": {JSON: {"schema": _ref("AnswersForgotten")}}},
                      "400": error("body is not valid JSON (malformed_json)"),
                      "404": error("no such batch of yours (batch_not_found)"),
                      "413": error(f"body over {max_body_bytes} bytes (body_too_large)"),
                      "415": error("Content-Type is not JSON (unsupported_media_type)"),
                      "422": error("invalid input: invalid_request (not exactly one of domains, batch_id, all), "
                                   "invalid_domains, unknown_classifier"), **common},
    }
    return {"/answers": {"get": listing}, "/answers/forget": {"post": forget},
            "/answers/{classifier}/{domain}": {"put": put, "delete": delete}}
