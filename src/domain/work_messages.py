"""The work-queue message: only the job's id (a claim check); the domains stay in the database.
Also a message as sent (body, group, deduplication id), and sending several by sending each."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from firmsift.domain.errors import QueuePartlySent, QueueUnavailable


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


async def send_each(send: Callable[[OutgoingMessage], Awaitable[object]], messages: Sequence[OutgoingMessage]) -> None:
    """WorkQueue.send_many for a queue without a batch call: `send` each message in turn; a
    failure raises QueuePartlySent with the count sent before it."""
    for sent, message in enumerate(messages):
        try:
            await send(message)
        except QueueUnavailable as error:
            raise QueuePartlySent(f"{error} ({sent} of {len(messages)} messages sent)", sent) from error
