"""The dead-letter port: inspect messages that failed too often, and send them back for a retry."""

from __future__ import annotations

from typing import Protocol

from firmsift.ports.queue import QueueMessage


class DeadLetters(Protocol):
    async def peek(self, *, max_messages: int) -> list[QueueMessage]:
        """Dead-lettered messages, oldest first where the queue keeps an order; they stay where they are."""

    async def redrive(self, *, max_messages: int) -> int:
        """Move up to max_messages back to the work queue; returns how many moved."""
