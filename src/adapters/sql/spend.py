"""SQLAlchemy spend ledger (SQLite and PostgreSQL): what finished job domains cost over a span,
and the holds of spend reserved for LLM calls still running."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, Engine, Select, delete, func, insert, select, text

from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.tables import job_domains, jobs, spend_reservations
from firmsift.domain.spend import Spend
from firmsift.domain.spend_reservations import SpendReservation

_USD_DIGITS = 12  # as domain.spend rounds its totals
# Holds are checked and taken one at a time: on PostgreSQL under this transaction-scoped advisory
# lock; on SQLite under the write lock the transaction's first statement (a delete) takes.
_RESERVING_LOCK = text("SELECT pg_advisory_xact_lock(7301985620)")


class SqlSpendLedger:
    """Implements SpendLedger with one aggregate over job_domains (ix_job_domains_finished_at),
    and SpendReservations with the spend_reservations table."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def spend_between(self, start: datetime, end: datetime, owner: str | None = None) -> Spend:
        def work(conn: Connection) -> Spend:
            tokens_in, tokens_out, cost, unknown = conn.execute(_spend(start, end, owner)).one()
            return Spend(int(tokens_in), int(tokens_out), round(float(cost), _USD_DIGITS), int(unknown))

        return await in_transaction(self.engine, work)

    async def reserve(self, reservation: SpendReservation, now: datetime, start: datetime, end: datetime,
                      key_limit: float | None, global_limit: float | None) -> tuple[str, float] | None:
        def work(conn: Connection) -> tuple[str, float] | None:
            if conn.dialect.name == "postgresql":
                conn.execute(_RESERVING_LOCK)
            conn.execute(delete(spend_reservations).where(spend_reservations.c.expires_at <= now.timestamp()))
            for scope, limit, owner in (("key", key_limit, reservation.owner), ("global", global_limit, None)):
                if limit is None or (scope == "key" and not owner):
                    continue
                held = select(func.coalesce(func.sum(spend_reservations.c.amount_usd), 0.0))
                if owner is not None:
                    held = held.where(spend_reservations.c.owner == owner)
                total = round(float(conn.execute(_spend(start, end, owner)).one()[2])
                              + float(conn.execute(held).scalar_one()), _USD_DIGITS)
                if total >= limit:
                    return scope, total
            conn.execute(insert(spend_reservations).values(
                id=reservation.id, owner=reservation.owner, amount_usd=reservation.amount_usd,
                expires_at=reservation.expires_at.timestamp()))
            return None

        return await in_transaction(self.engine, work)

    async def release(self, reservation_id: str) -> None:
        await in_transaction(self.engine, lambda conn: conn.execute(
            delete(spend_reservations).where(spend_reservations.c.id == reservation_id)))


def _spend(start: datetime, end: datetime, owner: str | None) -> Select:  # type: ignore[type-arg]
    """(tokens in, tokens out, cost, results of unknown cost) of what finished in [start, end), of `owner`'s jobs."""
    query = (
        select(func.coalesce(func.sum(job_domains.c.tokens_in), 0),
               func.coalesce(func.sum(job_domains.c.tokens_out), 0),
               func.coalesce(func.sum(job_domains.c.cost_usd), 0.0),
               func.count().filter(job_domains.c.cost_usd.is_(None)))
        .where(job_domains.c.finished_at >= start.timestamp(), job_domains.c.finished_at < end.timestamp())
    )
    if owner is not None:
        query = query.join(jobs, jobs.c.id == job_domains.c.job_id).where(jobs.c.owner == owner)
    return query
