"""The error body every refusal answers with: {"error": {"code", "message", "details", ...}} (entrypoints/http/errors.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from firmsift.entrypoints.http.contract.body import Body, optional
from firmsift.entrypoints.http.errors import MAX_DETAILS


class ErrorDetail(Body):
    """One refused value and why."""

    value: Any = Field(description="the offending input (long values are cut)")
    reason: str


class ErrorObject(Body):
    """What went wrong: a code for programs, a message for people, the refused values."""

    code: str = Field(description="machine-readable, e.g. invalid_domains")
    message: str
    details: list[ErrorDetail] = Field(max_length=MAX_DETAILS, description=f"the first {MAX_DETAILS} offending values")
    details_omitted: int = optional("offending values not listed, when there are more", ge=1)
    # The fields a 429 budget_exhausted adds; the contract also in docs/how-to/budgets.md (Daily spend limits).
    scope: Literal["key", "global"] = optional("budget_exhausted: whose daily limit is reached")
    limit_usd: float = optional("budget_exhausted: the daily limit, USD", ge=0)
    spent_usd: float = optional(
        "budget_exhausted: what was spent in the current UTC day (results of unknown cost count 0)", ge=0)
    resets_at: datetime = optional("budget_exhausted: the next UTC midnight, when the day's spend starts from 0 again")


class Error(Body):
    """Every error answer."""

    error: ErrorObject
