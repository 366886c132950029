"""SQLAlchemy spend ledger (SQLite and PostgreSQL): what finished job domains cost over a span."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, Engine, func, select

from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.tables import job_domains, jobs
from firmsift.domain.spend import Spend

_USD_DIGITS = 12  # as domain.spend rounds its totals


class SqlSpendLedger:
    """Implements SpendLedger with one aggregate over job_domains (ix_job_domains_finished_at)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def spend_between(self, start: datetime, end: datetime, owner: str | None = None) -> Spend:
        query = (
            select(func.coalesce(func.sum(job_domains.c.tokens_in), 0),
                   func.coalesce(func.sum(job_domains.c.tokens_out), 0),
                   func.coalesce(func.sum(job_domains.c.cost_usd), 0.0),
                   func.count().filter(job_domains.c.cost_usd.is_(None)))
            .where(job_domains.c.finished_at >= start.timestamp(), job_domains.c.finished_at < end.timestamp())
        )
        if owner is not None:
            query = query.join(jobs, jobs.c.id == job_domains.c.job_id).where(jobs.c.owner == owner)

        def work(conn: Connection) -> Spend:
            tokens_in, tokens_out, cost, unknown = conn.execute(query).one()
            return Spend(int(tokens_in), int(tokens_out), round(float(cost), _USD_DIGITS), int(unknown))

        return await in_transaction(self.engine, work)
