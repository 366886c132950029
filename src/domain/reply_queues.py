"""Reply-queue names: what a caller may write in X-Reply-Queue, and which ones a key may use."""

from __future__ import annotations

import re

from firmsift.domain.errors import FirmsiftError, InvalidRequest, Rejection

# Queue names as SQS allows them (80 characters, letters, digits, - and _, optional .fifo),
# or a full https queue URL for the SQS backend.
QUEUE_NAME_PATTERN = r"[A-Za-z0-9_-]{1,75}(\.fifo)?"
# [0-9], not \d: Python's \d also matches other scripts' digits, JSON Schema's (ECMA-262) does not.
QUEUE_URL_PATTERN = r"https?://[^\s/]+/[0-9]{12}/[A-Za-z0-9_-]{1,75}(\.fifo)?"
_QUEUE_NAME = re.compile(rf"^{QUEUE_NAME_PATTERN}$")
_QUEUE_URL = re.compile(rf"^{QUEUE_URL_PATTERN}$")


class ReplyQueueNotAllowed(FirmsiftError):
    """The caller's API key may not publish replies to this queue."""

    code = "reply_queue_not_allowed"

    def __init__(self, queue: str) -> None:
        super().__init__(f"this API key may not use the reply queue {queue!r}")
        self.queue = queue


def check_reply_queue(reply_queue: str | None) -> str | None:
    """The reply queue as stored (trimmed), or InvalidRequest for a value that names no queue."""
    if reply_queue is None:
        return None
    value = reply_queue.strip()
    if _QUEUE_NAME.match(value) or _QUEUE_URL.match(value):
        return value
    raise InvalidRequest(
        "invalid X-Reply-Queue",
        (Rejection(value=reply_queue, reason="must be a queue name (letters, digits, - and _, optional .fifo) "
                                              "or an SQS queue URL"),),
    )


def check_reply_queue_allowed(reply_queue: str | None, allowed: frozenset[str] | None) -> None:
    """Refuse a reply queue the caller may not use. `allowed` None means any (authentication
    off); an empty set means none. Names match exactly: a key allowed `replies` may not name
    a queue URL ending in `/replies`, which could be another account's queue."""
    if reply_queue is not None and allowed is not None and reply_queue not in allowed:
        raise ReplyQueueNotAllowed(reply_queue)
