"""The database queue's SQL, named and in one place: each function does one step of a
transaction on a connection the caller opened (tables queue_messages and queue_dedup, and on
PostgreSQL the advisory locks and notifications that go with them)."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field

from sqlalchemy import Connection, Row, delete, func, insert, select, text, update

from firmsift.adapters.sql.bulk_insert import insert_rows
from firmsift.adapters.sql.tables import queue_dedup, queue_messages
from firmsift.ports.queue import QueueMessage

# Column shorthands: every statement below reads these two tables.
msg = queue_messages.c
dedup = queue_dedup.c
_peer = queue_messages.alias("group_peer")
_expired = queue_dedup.alias("expired")
_MESSAGE_FIELDS = (msg.id, msg.body, msg.group_id, msg.receive_count)

# The lowest id in a message's group. Only that head may be delivered, which keeps each
# group in FIFO order with at most one message in flight (ix_queue_messages_group serves it).
_GROUP_HEAD_ID = (
    select(func.min(_peer.c.id))
    .where(_peer.c.queue == msg.queue, _peer.c.group_id == msg.group_id)
    .scalar_subquery()
)


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


def _on_postgresql(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


@dataclass
class Claim:
    """What one claiming transaction did: messages delivered, messages moved to the
    dead-letter queue, and when the earliest in-flight message becomes visible again."""

    delivered: list[QueueMessage] = field(default_factory=list)
    dead_lettered: int = 0
    next_visible_at: float | None = None


def insert_message(
    conn: Connection, *, queue: str, body: str, group_id: str, dedup_id: str, now: float, dedup_window: float
) -> int:
    """Store a message unless its dedup id was seen on this queue within the window; return
    the id of the stored message, or of the first one when the send is a duplicate. On
    PostgreSQL, receivers LISTENing in other processes are notified when the caller commits."""
    if _on_postgresql(conn):
        # Taken first, so a duplicate in the same group also waits and then sees the first's row.
        conn.execute(LOCK_GROUP_FOR_SEND, {"key": _group_lock_key(queue, group_id)})
    _purge_expired_dedup_ids(conn, queue=queue, now=now)
    first_id = conn.execute(
        select(dedup.message_id).where(
            dedup.queue == queue, dedup.dedup_id == dedup_id, dedup.expires_at > now
        )
    ).scalar()
    if first_id is not None:
        return int(first_id)
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
    _notify_sent(conn, queue)
    return int(message_id)


def insert_fresh_group_messages(
    conn: Connection, *, queue: str, messages: list[tuple[str, str]], now: float, dedup_window: float
) -> None:
    """Store (body, group id) messages, each the first of a group no other transaction can send
    to (a job created in this very transaction), with its group id as dedup id: in a few
    statements, however many there are. insert_message's per-group lock and dedup lookup are not
    needed: no other sender knows these groups before the commit, and their ids are new."""
    if not messages:
        return
    _purge_expired_dedup_ids(conn, queue=queue, now=now)
    insert_rows(conn, queue_messages, [
        {"queue": queue, "group_id": group_id, "body": body, "dedup_id": group_id, "sent_at": now,
         "visible_at": now, "receive_count": 0, "receipt": None}
        for body, group_id in messages
    ])
    # By group (ix_queue_messages_group): each group holds just this message, its dedup id the group id.
    ids = conn.execute(select(msg.id, msg.group_id).where(
        msg.queue == queue, msg.group_id.in_([group_id for _, group_id in messages]))).all()
    insert_rows(conn, queue_dedup, [
        {"queue": queue, "dedup_id": dedup_id, "message_id": message_id, "expires_at": now + dedup_window}
        for message_id, dedup_id in ids
    ])
    _notify_sent(conn, queue)


def _purge_expired_dedup_ids(conn: Connection, *, queue: str, now: float) -> None:
    # Expired rows are purged on the write path, so no sweeper process is needed. Rows another
    # sender is purging right now are left to it (SKIP LOCKED on PostgreSQL): a send never
    # waits on, or deadlocks with, another send over housekeeping.
    expired = (
        select(_expired.c.dedup_id)
        .where(_expired.c.queue == queue, _expired.c.expires_at <= now)
        .with_for_update(skip_locked=True)
    )
    conn.execute(delete(queue_dedup).where(dedup.queue == queue, dedup.dedup_id.in_(expired)))


def _notify_sent(conn: Connection, queue: str) -> None:
    if _on_postgresql(conn):
        conn.execute(NOTIFY_SENT, {"channel": notification_channel(queue), "queue": queue})


def claim_messages(
    conn: Connection,
    *,
    queue: str,
    now: float,
    limit: int,
    visibility_timeout: float,
    max_receives: int | None,
    dead_letter_queue: str,
) -> Claim:
    """Deliver up to `limit` group heads that are visible, one per group, moving heads that
    were received `max_receives` times to the dead-letter queue instead."""
    claim = Claim()
    while len(claim.delivered) < limit:
        heads = _select_deliverable_heads(conn, queue=queue, now=now, limit=limit - len(claim.delivered))
        if not heads:
            break
        for head in heads:
            if max_receives is not None and head.receive_count >= max_receives:
                _move_to_dead_letters(conn, head.id, dead_letter_queue=dead_letter_queue, now=now)
                claim.dead_lettered += 1
            else:
                message = _mark_in_flight(conn, head, now=now, visibility_timeout=visibility_timeout)
                claim.delivered.append(message)
        # Delivered heads now block their groups and dead-lettered ones have left the queue,
        # so the next round sees only heads not yet considered (the successors of moved ones).
    if claim.dead_lettered:
        _notify_sent(conn, dead_letter_queue)
    if not claim.delivered:
        claim.next_visible_at = conn.execute(
            select(func.min(msg.visible_at)).where(
                msg.queue == queue, msg.visible_at > now
            )
        ).scalar()
    return claim


def _select_deliverable_heads(conn: Connection, *, queue: str, now: float, limit: int) -> list[Row]:
    stmt = (
        select(*_MESSAGE_FIELDS)
        .where(
            msg.queue == queue,
            msg.visible_at <= now,
            msg.id == _GROUP_HEAD_ID,
        )
        .order_by(msg.id)
        .limit(limit)
    )
    if _on_postgresql(conn):
        # Concurrent workers pass over heads another transaction is claiming instead of
        # queueing behind its row lock. SQLite needs nothing: BEGIN IMMEDIATE serializes writers.
        stmt = stmt.with_for_update(skip_locked=True)
    return list(conn.execute(stmt).all())


def _mark_in_flight(conn: Connection, head: Row, *, now: float, visibility_timeout: float) -> QueueMessage:
    receipt = uuid.uuid4().hex
    conn.execute(
        update(queue_messages)
        .where(msg.id == head.id)
        .values(receipt=receipt, receive_count=msg.receive_count + 1, visible_at=now + visibility_timeout)
    )
    return QueueMessage(
        message_id=str(head.id), body=head.body, receipt=receipt,
        receive_count=head.receive_count + 1, group_id=head.group_id,
    )


def _move_to_dead_letters(conn: Connection, message_id: int, *, dead_letter_queue: str, now: float) -> None:
    conn.execute(
        update(queue_messages)
        .where(msg.id == message_id)
        .values(queue=dead_letter_queue, receipt=None, receive_count=0, visible_at=now)
    )


def delete_in_flight(conn: Connection, *, queue: str, receipt: str, now: float) -> bool:
    """Delete the message this receipt currently holds in flight; False if there is none."""
    result = conn.execute(
        delete(queue_messages).where(
            msg.queue == queue, msg.receipt == receipt, msg.visible_at > now
        )
    )
    return result.rowcount == 1


def set_visible_at(conn: Connection, *, queue: str, receipt: str, now: float, visible_at: float) -> bool:
    """Move the visibility of the message this receipt holds in flight; False if there is none."""
    result = conn.execute(
        update(queue_messages)
        .where(msg.queue == queue, msg.receipt == receipt, msg.visible_at > now)
        .values(visible_at=visible_at)
    )
    return result.rowcount == 1


def count_messages(conn: Connection, *, queue: str, now: float) -> dict[str, int]:
    """Messages not in flight ("visible", including those waiting behind their group) and in flight."""
    in_flight = (msg.visible_at > now).label("in_flight")
    rows = conn.execute(
        select(in_flight, func.count()).where(msg.queue == queue).group_by(in_flight)
    ).all()
    counts = {"visible": 0, "in_flight": 0}
    for is_in_flight, count in rows:
        counts["in_flight" if is_in_flight else "visible"] = int(count)
    return counts


def peek_messages(conn: Connection, *, queue: str, limit: int) -> list[QueueMessage]:
    """The oldest messages of a queue, in or out of flight, without touching them. The
    receipt is left empty: a peeked message cannot be deleted."""
    rows = conn.execute(
        select(*_MESSAGE_FIELDS)
        .where(msg.queue == queue)
        .order_by(msg.id)
        .limit(limit)
    ).all()
    return [QueueMessage(str(r.id), r.body, "", r.receive_count, r.group_id) for r in rows]
