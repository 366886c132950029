"""Queue ports: the FIFO work queue the worker consumes and the publisher of replies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from firmsift.domain.work_messages import OutgoingMessage
from firmsift.ports.infrastructure_errors import QueuePartlySent, QueueUnavailable

MAX_BATCH = 10  # messages one receive may ask for: SQS's limit, which every queue adapter keeps


@dataclass(frozen=True)
class QueueMessage:
    """A received message. `receipt` is new on every receive and is what deletes it."""

    message_id: str
    body: str
    receipt: str
    receive_count: int
    group_id: str


class WorkQueue(Protocol):
    """A FIFO queue with SQS semantics: message groups, visibility timeout, receipts,
    receive counts, dead-letter after too many receives, a deduplication window."""

    async def send(self, body: str, *, group_id: str, dedup_id: str) -> str:
        """Publish durably and return the message id; a repeated dedup id within the
        window is accepted and ignored. Raises QueueUnavailable."""

    async def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        """Publish each message durably, in order, as `send` would one by one, in as few calls as
        the queue allows (SQS: MAX_BATCH a call). Raises QueuePartlySent saying how many of the
        first messages are sent for sure."""

    async def receive(self, *, max_messages: int = 1, wait_seconds: float = 0.0) -> list[QueueMessage]:
        """Long-poll: return as soon as messages are available, or [] after wait_seconds.
        max_messages is from 1 to MAX_BATCH; ValueError otherwise."""

    async def delete(self, receipt: str) -> None:
        """Acknowledge a message. Raises StaleReceipt when the receipt is not current."""

    async def change_visibility(self, receipt: str, timeout_seconds: float) -> None:
        """Hide the message for timeout_seconds from now. Raises StaleReceipt."""


async def send_each(send: Callable[[OutgoingMessage], Awaitable[object]], messages: Sequence[OutgoingMessage]) -> None:
    """WorkQueue.send_many for a queue without a batch call: `send` each message in turn; a
    failure raises QueuePartlySent with the count sent before it."""
    for sent, message in enumerate(messages):
        try:
            await send(message)
        except QueueUnavailable as error:
            raise QueuePartlySent(f"{error} ({sent} of {len(messages)} messages sent)", sent) from error


class ReplyPublisher(Protocol):
    """Publishes a finished job's result to the queue the caller named."""

    async def publish(self, queue: str, body: str, *, group_id: str, dedup_id: str) -> None:
        """Raises QueueUnavailable when the reply cannot be written."""
