"""The OpenAPI description of POST /batches?dry_run=true: what a batch would cost (see
domain.estimates), and of a batch's spend so far."""

from __future__ import annotations

from typing import Any

from firmsift.domain.estimates import MIN_SAMPLES
from firmsift.entrypoints.http.openapi_costs import JOB_TOTAL

DRY_RUN_PARAMETER = {
    "name": "dry_run", "in": "query", "required": False, "schema": {"type": "boolean", "default": False},
    "description": "true: answer 200 with what the batch would cost (BatchEstimate), recording nothing and "
                   "calling no provider; the counts are those the same request without it would accept"}

BATCH_SPEND: dict[str, Any] = {
    **JOB_TOTAL,
    "description": ("what the batch's jobs spent on the LLM: the sums of their finished results' tokens_in, "
                    "tokens_out and cost_usd (each unique domain once; the result lines repeat a duplicate "
                    "row's figures); when cost_unknown_domains is above 0 they are lower bounds"),
}


def estimate_schema(accepted: dict[str, Any]) -> dict[str, Any]:
    """BatchEstimate: `accepted` (the BatchAccepted schema) without the batch id, and the estimate."""
    count = {"type": "integer", "minimum": 0}
    fields = {name: value for name, value in accepted["properties"].items() if name != "batch_id"}
    llm = {
        "model": {"type": "string", "description": "FIRMSIFT_LLM_MODEL"},
        "tokens_in": {**count, "description": "to_ask × tokens_per_domain.tokens_in"},
        "tokens_out": {**count, "description": "to_ask × tokens_per_domain.tokens_out"},
        "tokens_per_domain": {"type": "object", "additionalProperties": False,
                              "required": ["tokens_in", "tokens_out"],
                              "properties": {"tokens_in": count, "tokens_out": count}},
        "tokens_basis": {"type": "string", "description": (
            f"where tokens_per_domain comes from: the average of the classifier's stored LLM answers once at "
            f"least {MIN_SAMPLES} report tokens, else the prompt's length with typical evidence (4 characters "
            "a token) and a typical answer")},
        "cost_usd": {"type": ["number", "null"], "minimum": 0,
                     "description": "the tokens at the model's price; null when unknown (never 0 for unknown)"},
        "cost": {"type": "string", "description": "\"known\", or \"unknown: …\" saying why"},
        "concurrency": {**count, "description": "FIRMSIFT_LLM_CONCURRENCY: LLM calls at once per worker"},
        "wall_time": {"type": "string", "description": "\"none to ask\", or why the time is unknown"},
    }
    properties = {
        "dry_run": {"const": True}, **fields,
        "known_companies": {**count, "description": "answered from the known-companies table, no call"},
        "cached": {**count, "description": "a fresh stored answer of this classifier is reused"},
        "cached_precheck": {**count, "description": "a fresh pre-check outcome (no DNS, unreachable, parked)"},
        "to_precheck": {**count, "description": "new domains the pre-check looks at (0 when it is off)"},
        "to_ask": {**count, "description": "new domains: at most this many LLM questions"},
        "llm": {"type": "object", "additionalProperties": False, "required": list(llm), "properties": llm},
        "upper_bound": {"type": "string", "description": "why to_ask and its cost are an upper bound"},
    }
    return {"type": "object", "additionalProperties": False, "required": list(properties), "properties": properties}
