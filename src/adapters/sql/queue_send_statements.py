"""The database queue's SQL for sending, named and in one place: each function does one step of a
transaction on a connection the caller opened (tables queue_messages and queue_dedup, and on
PostgreSQL the advisory lock that orders a group's sends and the notification that wakes receivers)."""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, delete, insert, select, text

from firmsift.adapters.sql.bulk_insert import insert_rows
from firmsift.adapters.sql.tables import queue_dedup, queue_messages

# Column shorthands: every statement below reads these two tables.
msg = queue_messages.c
dedup = queue_dedup.c
_expired = queue_dedup.alias("expired")


# PostgreSQL only. Sends to one group take turns until they commit, so ids within a group are
# assigned in commit order: otherwise a lower id committing after a higher one was delivered
# would become the group's head while its successor is in flight (two in flight, out of order).
LOCK_GROUP_FOR_SEND = text("SELECT pg_advisory_xact_lock(:key)")
# Delivered at commit (never on rollback) to every connection LISTENing on the channel.
NOTIFY_SENT = text("SELECT pg_notify(:channel, :queue)")


def notification_channel(queue: str) -> str:
    """The LISTEN/NOTIFY channel of a queue: queue names may hold dots, dashes or a whole URL,
    and channels must be plain identifiers of at most 63 bytes, so the name is hashed."""
    return "firmsift_queue_" + hashlib.blake2b(queue.encode(), digest_size=16).hexdigest()


def _group_lock_key(queue: str, group_id: str) -> int:
    digest = hashlib.blake2b(f"{queue}\0{group_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)  # advisory-lock keys are signed 64-bit


def on_postgresql(conn: Connection) -> bool:
    """Whether the connection is to PostgreSQL: its locks and notifications do not exist on SQLite."""
    return conn.dialect.name == "postgresql"


def insert_message(
    conn: Connection, *, queue: str, body: str, group_id: str, dedup_id: str, now: float, dedup_window: float
) -> int:
    """Store a message unless its dedup id was seen on this queue within the window; return
    the id of the stored message, or of the first one when the send is a duplicate. On
    PostgreSQL, receivers LISTENing in other processes are notified when the caller commits."""
    if on_postgresql(conn):
        # Taken first, so a duplicate in the same group also waits and then sees the first's row.
        conn.execute(LOCK_GROUP_FOR_SEND, {"key": _group_lock_key(queue, group_id)})
    purge_expired_dedup_ids(conn, queue=queue, now=now)
    # By the primary key alone: with the expiry in the query, a planner whose statistics still
    # think the table small may read every live id of the queue through the expiry index.
    seen = conn.execute(
        select(dedup.message_id, dedup.expires_at).where(dedup.queue == queue, dedup.dedup_id == dedup_id)
    ).first()
    if seen is not None:
        if seen.expires_at > now:
            return int(seen.message_id)
        # Expired, but left by the purge (another sender holds it, or it was past PURGE_LIMIT).
        conn.execute(delete(queue_dedup).where(dedup.queue == queue, dedup.dedup_id == dedup_id))
    message_id = conn.execute(
        insert(queue_messages).values(
            queue=queue, group_id=group_id, body=body, dedup_id=dedup_id,
            sent_at=now, visible_at=now, receive_count=0, receipt=None,
        )
    ).inserted_primary_key[0]
    # The window runs from the first send and is not extended by duplicates (as on SQS);
    # the row outlives a delete of the message, so a late resend is still ignored.
    conn.execute(
        insert(queue_dedup).values(
            queue=queue, dedup_id=dedup_id, message_id=message_id, expires_at=now + dedup_window
        )
    )
    notify_sent(conn, queue)
    return int(message_id)


def insert_fresh_group_messages(
    conn: Connection, *, queue: str, messages: list[tuple[str, str]], now: float, dedup_window: float
) -> None:
    """Store (body, group id) messages, each the first of a group no other transaction can send
    to (a job created in this very transaction), with its group id as dedup id: in a few
    statements, however many there are. insert_message's per-group lock and dedup lookup are not
    needed: no other sender knows these groups before the commit, and their ids are new. The
    caller purges expired dedup ids once in its transaction (purge_expired_dedup_ids), not
    once per call."""
    if not messages:
        return
    columns = ("queue", "group_id", "body", "dedup_id", "sent_at", "visible_at", "receive_count")
    insert_rows(conn, queue_messages, columns,
                [(queue, group_id, body, group_id, now, now, 0) for body, group_id in messages])
    # By group (ix_queue_messages_group): each group holds just this message, its dedup id the group id.
    ids = conn.execute(select(msg.id, msg.group_id).where(
        msg.queue == queue, msg.group_id.in_([group_id for _, group_id in messages]))).all()
    insert_rows(conn, queue_dedup, ("queue", "dedup_id", "message_id", "expires_at"),
                [(queue, dedup_id, message_id, now + dedup_window) for message_id, dedup_id in ids])
    notify_sent(conn, queue)


# The most expired dedup ids one purge deletes, oldest first: a send's housekeeping stays bounded
# when a burst's ids expire together, and the planner, told of a few rows, takes them through the
# expiry index even before the table's statistics know how large it has grown.
PURGE_LIMIT = 1000


def purge_expired_dedup_ids(conn: Connection, *, queue: str, now: float) -> None:
    # Expired rows are purged on the write path, so no sweeper process is needed. Rows another
    # sender is purging right now are left to it (SKIP LOCKED on PostgreSQL): a send never
    # waits on, or deadlocks with, another send over housekeeping.
    expired = (
        select(_expired.c.dedup_id)
        .where(_expired.c.queue == queue, _expired.c.expires_at <= now)
        .order_by(_expired.c.expires_at)
        .limit(PURGE_LIMIT)
        .with_for_update(skip_locked=True)
    )
    conn.execute(delete(queue_dedup).where(dedup.queue == queue, dedup.dedup_id.in_(expired)))


def notify_sent(conn: Connection, queue: str) -> None:
    """Tell receivers in other processes, at commit, that the queue has a new message (PostgreSQL)."""
    if on_postgresql(conn):
        conn.execute(NOTIFY_SENT, {"channel": notification_channel(queue), "queue": queue})
