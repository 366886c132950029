"""The intake port: durably record a new job and queue its id, or fail leaving nothing half-done."""

from __future__ import annotations

from typing import Protocol

from firmsift.domain.model import Job


class JobIntake(Protocol):
    async def accept(self, job: Job) -> None:
        """Store the job as PENDING and publish {"job_id": ...} with group and dedup id = job id.

        Raises QueueUnavailable when that cannot be done durably; a job row left behind by such
        a failure is never PENDING (it would wait forever for a message that does not exist).
        """
