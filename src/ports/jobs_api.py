"""The firmsift API as `firmsift classify` uses it: submit a job of domains, read a job back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class ClientError(RuntimeError):
    """The API could not be reached or refused a request in a way that retrying will not fix."""


class BatchesMissing(ClientError):
    """The API has no batch routes (an older server): the caller falls back to jobs."""


class BatchRefused(ClientError):
    """The API refused a batch as too large (413): the caller sends fewer rows a batch."""


class JobsApi(Protocol):
    def submit(self, domains: list[str]) -> tuple[str | None, dict[str, str]]:
        """(job id, {domain: reason} of the domains the API refused); the job id is None when it
        refused every domain. Raises ClientError."""

    def job(self, job_id: str) -> dict[str, Any]:
        """The job's document, as GET /domains/classify/{job_id} answers it. Raises ClientError."""


class BatchesApi(JobsApi, Protocol):
    def submit_batch(self, domains: list[str], idempotency_key: str) -> str:
        """The batch id of the domains (the same one again for the same key). Raises BatchesMissing,
        BatchRefused or ClientError."""

    def batch(self, batch_id: str) -> dict[str, Any]:
        """The batch's progress document, as GET /batches/{id} answers it. Raises ClientError."""

    def batch_results(self, batch_id: str, start: int) -> Iterator[dict[str, Any]]:
        """The batch's result lines from row index `start`, in input order. Raises ClientError."""
