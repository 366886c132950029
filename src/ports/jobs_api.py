"""The firmsift API as `firmsift classify` uses it: submit a job of domains, read a job back."""

from __future__ import annotations

from typing import Any, Protocol


class ClientError(RuntimeError):
    """The API could not be reached or refused a request in a way that retrying will not fix."""


class JobsApi(Protocol):
    def submit(self, domains: list[str]) -> tuple[str | None, dict[str, str]]:
        """(job id, {domain: reason} of the domains the API refused); the job id is None when it
        refused every domain. Raises ClientError."""

    def job(self, job_id: str) -> dict[str, Any]:
        """The job's document, as GET /domains/classify/{job_id} answers it. Raises ClientError."""
