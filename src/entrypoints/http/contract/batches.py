"""The batch bodies: the 202 of POST /batches, GET /batches/{batch_id} (progress, spend, pause) and its DELETE."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import Field

from firmsift.domain.batches import BatchStatus
from firmsift.domain.economy import BatchMode
from firmsift.entrypoints.http.contract.body import Body, optional
from firmsift.entrypoints.http.contract.jobs import WARNING, JobPause, JobTotal

BatchModeName = Literal[tuple(mode.value for mode in BatchMode)]  # type: ignore[valid-type]
MODE = ("economy: domains that need the LLM are asked through the provider's batch API, at half the price, "
        "answered within 24 hours")
Count = Annotated[int, Field(ge=0)]


class RejectedRow(Body):
    """An input row without a usable domain."""

    index: Count = Field(description="0-based row of the list or of the CSV data")
    line: int = optional("CSV line the row starts on", ge=2)
    reason: str


class BatchCounts(Body):
    """What a batch request holds: its rows, unique domains, duplicates and rejected rows."""

    classifier: str
    mode: BatchModeName = Field(description=MODE)
    total: Count = Field(description="rows read")
    accepted: Count = Field(description="unique domains to classify")
    duplicates: Count = Field(description="rows whose domain an earlier row already has")
    rejected: list[RejectedRow] = Field(description="the first 1,000 rejected rows (the results list them all)")
    rejected_total: Count = Field(description="rows without a usable domain")


class BatchAccepted(BatchCounts):
    """The batch accepted (or, for a repeated Idempotency-Key, the batch accepted first)."""

    batch_id: UUID
    warning: str = optional(WARNING)


class BatchSpend(JobTotal):
    """What the batch's jobs spent on the LLM: the sums of their finished results' tokens_in, tokens_out
    and cost_usd (each unique domain once; the result lines repeat a duplicate row's figures); when
    cost_unknown_domains is above 0 they are lower bounds."""


class BatchPause(JobPause):
    """The latest pause among the batch's jobs that wait on a daily spend limit (see the Job's paused),
    and how many wait."""

    jobs: Count = Field(ge=1, description="how many of the batch's jobs are paused")


class BatchProgress(Body):
    """A batch's progress."""

    batch_id: UUID
    classifier: str
    mode: BatchModeName = Field(description=MODE)
    status: Literal[tuple(status.value for status in BatchStatus)]  # type: ignore[valid-type]
    total: Count = Field(description="unique domains to classify: done + failed + pending + cancelled")
    done: Count
    failed: Count
    pending: Count
    cancelled: Count = Field(description="domains whose job DELETE stopped before it started")
    by_source: dict[str, Count] = Field(description=(
        "finished domains by the path that answered them (human, known_company, cache, llm, …)"))
    rows: Count = Field(description="input rows read")
    duplicates: Count
    rejected: Count = Field(description="rows without a usable domain")
    created_at: datetime
    finished_at: datetime | None = Field(description=(
        "when the last domain finished (or the batch was cancelled); null while any is pending"))
    estimated_finish_at: datetime | None = Field(description=(
        "at the rate seen so far; null before the first domain finished and once none is pending"))
    spend: BatchSpend
    paused: BatchPause | None = Field(description="null when no job of the batch waits on a spend limit")
    warning: str = optional(WARNING + "; only while the batch is RUNNING")


class BatchCancelled(BatchProgress):
    """The batch after cancelling what had not started."""

    cancelled_jobs: Count = Field(description="jobs stopped now (not started yet)")


class BatchRetried(BatchProgress):
    """The batch after queueing its failed rows again."""

    retried_jobs: Count = Field(description="jobs queued again (0: nothing had failed)")
