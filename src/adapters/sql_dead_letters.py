"""Dead letters of the database queue: peek at them, or move them back to the work queue."""

from __future__ import annotations

import uuid

from firmsift.adapters.sql_queue import SqlQueue
from firmsift.ports.queue import QueueMessage



class SqlDeadLetters:
    """The dead-letter queue of `work_queue` (a table row per message, like every other queue)."""

    def __init__(self, work_queue: SqlQueue, dead_letter_queue: SqlQueue) -> None:
        self.work_queue = work_queue
        self.dead_letter_queue = dead_letter_queue

    async def peek(self, *, max_messages: int) -> list[QueueMessage]:
        return await self.dead_letter_queue.read_messages(limit=max_messages, consume=False)

    async def redrive(self, *, max_messages: int) -> int:
        moved = 0
        while moved < max_messages:
            batch = await self.dead_letter_queue.receive(max_messages=min(10, max_messages - moved))
            if not batch:
                break
            for message in batch:
                # A fresh dedup id: the original one (the job id) may still be inside the
                # 5-minute window, which would silently drop the retry.
                await self.work_queue.send(message.body, group_id=message.group_id,
                                           dedup_id=f"{message.group_id}:redrive:{uuid.uuid4().hex}")
                await self.dead_letter_queue.delete(message.receipt)
                moved += 1
        return moved
