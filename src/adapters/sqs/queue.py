"""The SQS work queue and reply publisher: WorkQueue and ReplyPublisher on an SQS client (botocore's, see client.py).

The caller (the container) makes the client; nothing here connects at import time. Recommended
client settings for production::

    botocore.session.Session().create_client(
        "sqs", region_name=..., endpoint_url=...,   # endpoint only for an emulator or a VPC endpoint
        config=botocore.config.Config(
            connect_timeout=5,      # an unreachable endpoint becomes QueueUnavailable in seconds, not minutes
            read_timeout=30,        # must outlast the longest long poll (20 s)
            retries={"mode": "standard", "max_attempts": 3},  # throttling and 5xx retried with backoff
            max_pool_connections=20,  # at least the calls in flight at once: polls, deletes, heartbeats
        ),
    )

botocore is synchronous, so every call runs in a worker thread (asyncio.to_thread). A receive that is
cancelled while its thread waits still completes: its messages come back after the visibility timeout.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from firmsift.adapters.sqs.errors import (
    MISSING_QUEUE,
    describe_sqs_error,
    is_stale_receipt,
    sqs_error_codes,
    sqs_errors,
)
from firmsift.domain.errors import StaleReceipt
from firmsift.domain.work_messages import OutgoingMessage
from firmsift.ports.infrastructure_errors import QueuePartlySent, QueueUnavailable
from firmsift.ports.queue import MAX_BATCH, QueueMessage

T = TypeVar("T")

MAX_WAIT_SECONDS = 20  # SQS's limit on a long poll
MAX_VISIBILITY_SECONDS = 43_200  # SQS's limit on a visibility timeout (12 hours)
_SYSTEM_ATTRIBUTES = ("ApproximateReceiveCount", "MessageGroupId")


def is_queue_url(queue: str) -> bool:
    return queue.startswith(("https://", "http://"))


def queue_name(queue: str) -> str:
    """The queue's name, from a name or a URL (https://sqs.<region>.amazonaws.com/<account>/<name>)."""
    return queue.rstrip("/").rsplit("/", 1)[-1] if is_queue_url(queue) else queue


class QueueLocator:
    """Queue URLs for names or URLs: a URL is used as given, a name is looked up with GetQueueUrl
    once and remembered, so steady traffic costs no extra calls."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._urls: dict[str, str] = {}
        self._lock = threading.Lock()  # called from worker threads; one lookup per name

    def url(self, queue: str) -> str:
        """Blocking: call it inside the worker thread that makes the SQS call."""
        if is_queue_url(queue):
            return queue
        with self._lock:
            if queue not in self._urls:
                self._urls[queue] = self._client.get_queue_url(QueueName=queue)["QueueUrl"]
            return self._urls[queue]

    def forget(self, queue: str) -> None:
        """Drop a remembered URL, so a queue deleted and created again is looked up afresh."""
        with self._lock:
            self._urls.pop(queue, None)


async def call_sqs(locator: QueueLocator, queue: str, action: str, work: Callable[[], T]) -> T:
    """Run blocking boto3 work off the event loop. SQS refusals and connection failures become
    QueueUnavailable naming the queue and the action (see sqs_errors)."""
    with sqs_errors(f"SQS queue {queue!r}: could not {action}"):
        try:
            return await asyncio.to_thread(work)
        except ClientError as exc:
            if sqs_error_codes(exc) & MISSING_QUEUE:
                locator.forget(queue)
            raise


def whole_seconds(seconds: float, *, name: str, highest: int) -> int:
    """SQS takes whole seconds: round up, so a lease is never shorter than asked."""
    if not 0 <= seconds <= highest:
        raise ValueError(f"{name} must be between 0 and {highest} seconds, not {seconds}")
    return math.ceil(seconds)


def _queue_message(raw: dict[str, Any]) -> QueueMessage:
    attributes = raw.get("Attributes", {})
    return QueueMessage(
        message_id=raw["MessageId"], body=raw["Body"], receipt=raw["ReceiptHandle"],
        receive_count=int(attributes.get("ApproximateReceiveCount", 1)),
        group_id=attributes.get("MessageGroupId", ""),
    )


class SqsQueue:
    """A WorkQueue on an SQS FIFO queue: group id and dedup id go to SQS, which keeps order per
    group, hides received messages for `visibility_timeout` and dead-letters by its redrive policy.
    `queue` is a queue URL or a name (looked up once)."""

    def __init__(self, client: Any, queue: str, *, visibility_timeout: float) -> None:
        if visibility_timeout <= 0:
            raise ValueError("visibility_timeout must be positive")  # zero would redeliver at once
        self._client = client
        self._queue = queue
        self.queue_name = queue_name(queue)
        self._visibility_timeout = whole_seconds(
            visibility_timeout, name="visibility_timeout", highest=MAX_VISIBILITY_SECONDS
        )
        self._locator = QueueLocator(client)

    def _url(self) -> str:
        return self._locator.url(self._queue)

    async def _call(self, action: str, work: Callable[[], T]) -> T:
        return await call_sqs(self._locator, self._queue, action, work)

    async def send(self, body: str, *, group_id: str, dedup_id: str) -> str:
        """Send durably and return the message id; SQS ignores a dedup id seen in the last 5 minutes."""

        def send_one() -> str:
            response = self._client.send_message(
                QueueUrl=self._url(), MessageBody=body, MessageGroupId=group_id, MessageDeduplicationId=dedup_id
            )
            return str(response["MessageId"])

        return await self._call("send a message", send_one)

    async def send_many(self, messages: Sequence[OutgoingMessage]) -> None:
        """SendMessageBatch, MAX_BATCH messages a call, in order. SQS answers each entry on its own:
        the first entry it refused (or a call that failed) stops the sending, and QueuePartlySent
        counts the messages before it; later entries of that call may have been sent too."""
        for start in range(0, len(messages), MAX_BATCH):
            chunk = messages[start:start + MAX_BATCH]
            try:
                await self._call("send messages", lambda chunk=chunk: self._send_chunk(chunk))
            except QueuePartlySent as error:
                raise QueuePartlySent(f"{error} ({start + error.sent} of {len(messages)} messages sent)",
                                      start + error.sent) from error
            except QueueUnavailable as error:
                raise QueuePartlySent(f"{error} ({start} of {len(messages)} messages sent)", start) from error

    def _send_chunk(self, chunk: Sequence[OutgoingMessage]) -> None:
        entries = [{"Id": str(i), "MessageBody": m.body, "MessageGroupId": m.group_id,
                    "MessageDeduplicationId": m.dedup_id} for i, m in enumerate(chunk)]
        response = self._client.send_message_batch(QueueUrl=self._url(), Entries=entries)
        failed = sorted(response.get("Failed", []), key=lambda entry: int(entry["Id"]))
        if failed:
            first = failed[0]
            raise QueuePartlySent(f"SQS queue {self.queue_name!r}: could not send messages: {len(failed)} of "
                                  f"{len(chunk)} refused, the first with {first.get('Code')}: "
                                  f"{first.get('Message', '')}", int(first["Id"]))

    async def receive(self, *, max_messages: int = 1, wait_seconds: float = 0.0) -> list[QueueMessage]:
        """Long-poll SQS for up to max_messages (wait rounded up to whole seconds, at most 20)."""
        if not 1 <= max_messages <= MAX_BATCH:
            raise ValueError(f"max_messages must be between 1 and {MAX_BATCH}")
        wait = whole_seconds(wait_seconds, name="wait_seconds", highest=MAX_WAIT_SECONDS)

        def receive_some() -> list[dict[str, Any]]:
            response = self._client.receive_message(
                QueueUrl=self._url(), MaxNumberOfMessages=max_messages, WaitTimeSeconds=wait,
                VisibilityTimeout=self._visibility_timeout, MessageSystemAttributeNames=list(_SYSTEM_ATTRIBUTES),
            )
            return list(response.get("Messages", []))

        return [_queue_message(raw) for raw in await self._call("receive", receive_some)]

    async def delete(self, receipt: str) -> None:
        """Acknowledge a message. StaleReceipt when SQS refuses the receipt as invalid or expired
        (SQS may also accept an outdated receipt and keep the message: its DeleteMessage contract)."""

        def delete_one() -> None:
            try:
                self._client.delete_message(QueueUrl=self._url(), ReceiptHandle=receipt)
            except ClientError as exc:
                if is_stale_receipt(exc):
                    raise StaleReceipt(self._stale(receipt, exc)) from exc
                raise

        await self._call("delete a message", delete_one)

    async def change_visibility(self, receipt: str, timeout_seconds: float) -> None:
        """Hide the message for timeout_seconds (rounded up) from now; 0 releases it at once."""
        timeout = whole_seconds(timeout_seconds, name="timeout_seconds", highest=MAX_VISIBILITY_SECONDS)

        def change_one() -> None:
            try:
                self._client.change_message_visibility(
                    QueueUrl=self._url(), ReceiptHandle=receipt, VisibilityTimeout=timeout
                )
            except ClientError as exc:
                if is_stale_receipt(exc):
                    raise StaleReceipt(self._stale(receipt, exc)) from exc
                raise

        await self._call("change a message's visibility", change_one)

    async def approximate_counts(self) -> dict[str, int]:
        """{"visible": n, "in_flight": m} as SQS estimates them (eventually consistent on AWS)."""

        def count() -> dict[str, int]:
            attributes = self._client.get_queue_attributes(
                QueueUrl=self._url(),
                AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
            )["Attributes"]
            return {
                "visible": int(attributes["ApproximateNumberOfMessages"]),
                "in_flight": int(attributes["ApproximateNumberOfMessagesNotVisible"]),
            }

        return await self._call("count messages", count)

    def _stale(self, receipt: str, exc: ClientError) -> str:
        shown = receipt if len(receipt) <= 24 else f"{receipt[:24]}..."  # AWS receipts run to hundreds of characters
        return f"receipt {shown!r} is not current on SQS queue {self.queue_name!r} ({describe_sqs_error(exc)})"


class SqsReplyPublisher:
    """A ReplyPublisher sending to the SQS queue a caller named in X-Reply-Queue: a queue name
    (looked up once, then remembered) or a queue URL. FIFO queues (names ending .fifo) get the
    group and deduplication ids; standard queues take neither."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._locator = QueueLocator(client)

    async def publish(self, queue: str, body: str, *, group_id: str, dedup_id: str) -> None:
        fifo = queue_name(queue).endswith(".fifo")
        ids = {"MessageGroupId": group_id, "MessageDeduplicationId": dedup_id} if fifo else {}

        def send_reply() -> None:
            self._client.send_message(QueueUrl=self._locator.url(queue), MessageBody=body, **ids)

        await call_sqs(self._locator, queue, "publish the reply", send_reply)
