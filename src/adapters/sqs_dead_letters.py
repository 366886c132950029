"""Operator tools for an SQS work queue's dead-letter queue: see what died, move it back to be retried."""

from __future__ import annotations

import uuid
from functools import partial
from typing import Any

from firmsift.adapters.sqs_queue import MAX_BATCH, QueueLocator, call_sqs, queue_name
from firmsift.ports.queue import QueueMessage

_REDRIVE_LEASE_SECONDS = 30  # a redrive that dies midway leaves its unmoved messages visible this soon


class SqsDeadLetters:
    """The dead-letter queue of one work queue, each given as a name or a URL."""

    def __init__(self, client: Any, *, queue: str, dead_letter_queue: str, peek_seconds: int = 5) -> None:
        if peek_seconds < 1:
            raise ValueError("peek_seconds must be at least 1, or a listing would see its own messages again")
        self._client = client
        self._queue = queue
        self._dead_letter_queue = dead_letter_queue
        self._peek_seconds = peek_seconds
        self._locator = QueueLocator(client)

    async def peek(self, *, max_messages: int) -> list[QueueMessage]:
        """Up to max_messages dead letters, left in place. They are received with a short
        visibility timeout (peek_seconds, a safety net if this process dies) and released at once.
        On a FIFO queue SQS shows a group's later messages only after its head, so a listing holds
        mostly group heads; firmsift sends one message per job, so that is every job."""
        if max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        peek = partial(self._peek, max_messages)
        return await call_sqs(self._locator, self._dead_letter_queue, "list dead letters", peek)

    def _peek(self, max_messages: int) -> list[QueueMessage]:
        url = self._locator.url(self._dead_letter_queue)
        seen: list[QueueMessage] = []
        receipts: list[str] = []
        while len(seen) < max_messages:
            batch = self._client.receive_message(
                QueueUrl=url, MaxNumberOfMessages=min(MAX_BATCH, max_messages - len(seen)), WaitTimeSeconds=0,
                VisibilityTimeout=self._peek_seconds,
                MessageSystemAttributeNames=["ApproximateReceiveCount", "MessageGroupId"],
            ).get("Messages", [])
            if not batch:
                break
            for raw in batch:
                attributes = raw.get("Attributes", {})
                # No receipt: the message is released below and must not be deleted through a peek.
                seen.append(QueueMessage(
                    message_id=raw["MessageId"], body=raw["Body"], receipt="",
                    receive_count=int(attributes.get("ApproximateReceiveCount", 1)),
                    group_id=attributes.get("MessageGroupId", ""),
                ))
                receipts.append(raw["ReceiptHandle"])
        for start in range(0, len(receipts), MAX_BATCH):
            entries = [
                {"Id": str(index), "ReceiptHandle": receipt, "VisibilityTimeout": 0}
                for index, receipt in enumerate(receipts[start:start + MAX_BATCH])
            ]
            # A release that fails only delays the message by peek_seconds, so failures are not fatal.
            self._client.change_message_visibility_batch(QueueUrl=url, Entries=entries)
        return seen

    async def redrive(self, *, max_messages: int) -> int:
        """Move up to max_messages dead letters back to the work queue, in order: each is
        received, sent to the work queue and then deleted. Returns how many moved."""
        if max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        return await call_sqs(self._locator, self._dead_letter_queue, "redrive dead letters",
                              partial(self._move, max_messages))

    def _move(self, limit: int) -> int:
        source = self._locator.url(self._dead_letter_queue)
        destination = self._locator.url(self._queue)
        fifo = queue_name(self._queue).endswith(".fifo")
        moved = 0
        while moved < limit:
            wanted = min(MAX_BATCH, limit - moved)
            batch = self._client.receive_message(
                QueueUrl=source, MaxNumberOfMessages=wanted, WaitTimeSeconds=0,
                VisibilityTimeout=_REDRIVE_LEASE_SECONDS, MessageSystemAttributeNames=["MessageGroupId"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not batch:
                break
            for raw in batch:
                message: dict[str, Any] = {"QueueUrl": destination, "MessageBody": raw["Body"]}
                if raw.get("MessageAttributes"):
                    message["MessageAttributes"] = raw["MessageAttributes"]
                if fifo:
                    # A fresh dedup id: the original may still be inside the work queue's 5-minute
                    # window, where SQS would accept the message and silently drop it. A crash
                    # between send and delete can therefore redeliver once; jobs are idempotent.
                    message["MessageGroupId"] = raw.get("Attributes", {}).get("MessageGroupId", raw["MessageId"])
                    message["MessageDeduplicationId"] = f"redrive-{uuid.uuid4().hex}"
                self._client.send_message(**message)
                self._client.delete_message(QueueUrl=source, ReceiptHandle=raw["ReceiptHandle"])
                moved += 1
        return moved
