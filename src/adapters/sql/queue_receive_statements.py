"""The database queue's SQL for receiving, named and in one place: each function does one step of
a transaction on a connection the caller opened (table queue_messages): claiming group heads,
dead-lettering, acknowledging, moving visibility, counting and peeking."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from sqlalchemy import Connection, Row, delete, func, select, update

from firmsift.adapters.sql.queue_send_statements import notify_sent, on_postgresql
from firmsift.adapters.sql.tables import queue_messages
from firmsift.ports.queue import QueueMessage

# Column shorthands: every statement below reads this table.
msg = queue_messages.c
_peer = queue_messages.alias("group_peer")
_MESSAGE_FIELDS = (msg.id, msg.body, msg.group_id, msg.receive_count)

# The lowest id in a message's group. Only that head may be delivered, which keeps each
# group in FIFO order with at most one message in flight (ix_queue_messages_group serves it).
_GROUP_HEAD_ID = (
    select(func.min(_peer.c.id))
    .where(_peer.c.queue == msg.queue, _peer.c.group_id == msg.group_id)
    .scalar_subquery()
)


@dataclass
class Claim:
    """What one claiming transaction did: messages delivered, messages moved to the
    dead-letter queue, and when the earliest in-flight message becomes visible again."""

    delivered: list[QueueMessage] = field(default_factory=list)
    dead_lettered: int = 0
    next_visible_at: float | None = None


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
        notify_sent(conn, dead_letter_queue)
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
    if on_postgresql(conn):
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
