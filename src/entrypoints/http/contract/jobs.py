"""The job bodies: the 202 of POST /domains/classify, GET /domains/classify/{job_id} (a Job with its
Results), and the health checks."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import Field

from firmsift.entrypoints.http.contract.body import Body, optional
from firmsift.entrypoints.http.contract.results import Result

JobStatusName = Literal["PENDING", "RUNNING", "DONE", "FAILED"]


WARNING = ("why no worker can take the job, and the fix (`firmsift serve` whose LLM has no credentials); "
           "absent when workers can run")


class Accepted(Body):
    """The job accepted (or, for a repeated Idempotency-Key, the job accepted first)."""

    job_id: UUID
    status: JobStatusName
    classifier: str
    domains: list[str] = Field(description="normalized, duplicates removed")
    warning: str = optional(WARNING)


class JobTotal(Body):
    """What the job spent on the LLM: the sums of its finished results' tokens_in, tokens_out and
    cost_usd; when cost_unknown_domains is above 0 they are lower bounds."""

    tokens_in: int = Field(ge=0)
    tokens_out: int = Field(ge=0)
    cost_usd: float = Field(ge=0)
    cost_unknown_domains: int = Field(ge=0, description="finished results whose cost_usd is null (unknown)")


class JobPause(Body):
    """Why a PENDING job waits: a daily spend limit was reached when a worker had it, so its domains
    that need the LLM wait (nothing fails) until the limit resets or is raised (domain.budgets.pause_document)."""

    reason: Literal["budget_exhausted"]
    limit: Literal["key", "global"] = Field(description=(
        "whose daily spend limit was reached: the job's API key's or the service's (FIRMSIFT_DAILY_SPEND_LIMIT_USD)"))
    limit_usd: float = Field(ge=0, description="that limit, USD a UTC day")
    spent_usd: float = Field(ge=0, description="what had been spent that day when the job paused")
    paused_at: datetime = Field(description="when the worker paused the job")
    resets_at: datetime = Field(description="the next UTC midnight: the limit's day ends and its spend starts from 0")
    next_check_at: datetime = Field(description=(
        "when a worker looks at the job again: the reset, or FIRMSIFT_BUDGET_RECHECK_SECONDS after the pause if "
        "sooner (a limit raised meanwhile takes effect then)"))
    message: str = Field(description="the same for a person")


class Job(Body):
    """A job's status and every domain finished so far."""

    job_id: UUID
    classifier: str
    status: JobStatusName
    created_at: datetime
    results: list[Result]
    total: JobTotal
    paused: JobPause | None = Field(description=(
        "null when the job is not paused (cleared as soon as a worker runs it again)"))
    error: str = optional("why the whole job failed")
    warning: str = optional(WARNING + "; only while the job is PENDING")


class Health(Body):
    """The process serves requests."""

    status: Literal["ok"]


class Readiness(Body):
    """Whether the database answers and takes writes, the work queue answers, the latest intake did
    not fail, and (for `serve`) the embedded worker could start."""

    status: Literal["ready", "not ready"]
    checks: dict[str, str] = Field(description="each check's name and \"ok\" or what failed")
