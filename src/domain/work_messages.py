"""The work-queue message: only the job's id (a claim check); the domains stay in the database.
Also a message as sent (body, group, deduplication id)."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class OutgoingMessage:
    """A message to send: its body, FIFO group and deduplication id."""

    body: str
    group_id: str
    dedup_id: str


def job_message(job_id: str) -> str:
    """The message body that asks a worker to process the job."""
    return json.dumps({"job_id": job_id})


def job_id_in(body: str) -> str | None:
    """The job id a message body carries, or None for a malformed one."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None
    job_id = document.get("job_id") if isinstance(document, dict) else None
    return job_id if isinstance(job_id, str) and job_id else None
