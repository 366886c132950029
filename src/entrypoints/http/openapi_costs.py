"""The OpenAPI description of what LLM answers cost: per result (this job's spend, the answer's
own call), the job's total, and the fields of a budget_exhausted error. One contract, stated
once, also in README (What an answer costs, Daily spend limits)."""

from __future__ import annotations

from typing import Any

_TOKENS = {"type": ["integer", "null"], "minimum": 0}
_USD = {"type": ["number", "null"], "minimum": 0}

RESULT_COST_FIELDS = ["tokens_in", "tokens_out", "cost_usd", "answer_tokens_in", "answer_tokens_out",
                      "answer_cost_usd"]

RESULT_COST_PROPERTIES: dict[str, Any] = {
    "tokens_in": {**_TOKENS, "description": (
        "prompt tokens this job was billed for the domain, as the provider reported them (every billed attempt "
        "of its LLM call); 0 when the job made no LLM call (known company, cache, or a call another job made "
        "at the same time); null when unknown: not reported, not finished, or the call failed without a "
        "response")},
    "tokens_out": {**_TOKENS, "description": "completion tokens this job was billed for the domain; as tokens_in"},
    "cost_usd": {**_USD, "description": (
        "what this job spent on the domain in US dollars: its LLM call's tokens at the configured model's "
        "price (FIRMSIFT_LLM_INPUT_COST_PER_MILLION and _OUTPUT_, else litellm's local price map; a model on "
        "a local API base has none unless configured); 0 when it made no LLM call; null when unknown, never "
        "0 for an unknown cost")},
    "answer_tokens_in": {**_TOKENS, "description": (
        "prompt tokens of the LLM call the answer was read from: for a cached answer, the call made when it "
        "was first answered; null where no LLM answered (known company) or unknown")},
    "answer_tokens_out": {**_TOKENS, "description": "completion tokens of the answer's LLM call; as answer_tokens_in"},
    "answer_cost_usd": {**_USD, "description": (
        "what the answer's LLM call cost in US dollars when it was made (equal to cost_usd when this job "
        "made it); null where no LLM answered or the cost is unknown")},
}

JOB_TOTAL: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "required": ["tokens_in", "tokens_out", "cost_usd", "cost_unknown_domains"],
    "description": ("what the job spent on the LLM: the sums of its finished results' tokens_in, tokens_out and "
                    "cost_usd; when cost_unknown_domains is above 0 they are lower bounds"),
    "properties": {
        "tokens_in": {"type": "integer", "minimum": 0},
        "tokens_out": {"type": "integer", "minimum": 0},
        "cost_usd": {"type": "number", "minimum": 0},
        "cost_unknown_domains": {"type": "integer", "minimum": 0,
                                 "description": "finished results whose cost_usd is null (unknown)"},
    },
}

# The fields a 429 budget_exhausted error adds to the error object (entrypoints/http/errors.py).
BUDGET_ERROR_PROPERTIES: dict[str, Any] = {
    "scope": {"enum": ["key", "global"], "description": "budget_exhausted: whose daily limit is reached"},
    "limit_usd": {"type": "number", "minimum": 0, "description": "budget_exhausted: the daily limit, USD"},
    "spent_usd": {"type": "number", "minimum": 0, "description": (
        "budget_exhausted: what was spent in the current UTC day (results of unknown cost count 0)")},
    "resets_at": {"type": "string", "format": "date-time", "description": (
        "budget_exhausted: the next UTC midnight, when the day's spend starts from 0 again")},
}
