"""Reading a reply queue of the embedded backend, for a person or a script (`firmsift replies`)."""

from __future__ import annotations

from typing import Protocol

from firmsift.ports.queue import QueueMessage


class ReplyReading(Protocol):
    async def read_messages(self, *, limit: int = 10, wait_seconds: float = 0.0,
                            consume: bool = True) -> list[QueueMessage]:
        """Up to `limit` messages: with `consume`, received and deleted (waiting up to
        `wait_seconds` for the first); without, the oldest peeked at, nothing changed."""
