"""SQLAlchemy API-key store (SQLite and PostgreSQL): key records and the digests of their keys."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, select, update

from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.tables import api_keys
from firmsift.domain.keys import ApiKey

T = TypeVar("T")


class SqlApiKeys:
    """Implements ApiKeyStore. Lookups go through the unique index on key_hash."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _run(self, work: Callable[[Connection], T]) -> T:
        return await in_transaction(self.engine, work)

    async def add_key(self, key: ApiKey, digest: str) -> None:
        await self._run(lambda conn: conn.execute(api_keys.insert().values(
            id=key.id, name=key.name, key_hash=digest, reply_queues=json.dumps(list(key.reply_queues)),
            created_at=key.created_at.timestamp(),
            revoked_at=key.revoked_at.timestamp() if key.revoked_at else None,
            daily_limit_usd=key.daily_limit_usd,
        )))

    async def find_by_digest(self, digest: str) -> ApiKey | None:
        def work(conn: Connection) -> ApiKey | None:
            row = conn.execute(select(api_keys).where(api_keys.c.key_hash == digest)).mappings().first()
            return _key(row) if row else None

        return await self._run(work)

    async def get_key(self, key_id: str) -> ApiKey | None:
        def work(conn: Connection) -> ApiKey | None:
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).mappings().first()
            return _key(row) if row else None

        return await self._run(work)

    async def set_daily_limit(self, key_id: str, limit_usd: float | None) -> ApiKey | None:
        def work(conn: Connection) -> ApiKey | None:
            conn.execute(update(api_keys).where(api_keys.c.id == key_id).values(daily_limit_usd=limit_usd))
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).mappings().first()
            return _key(row) if row else None

        return await self._run(work)

    async def list_keys(self) -> list[ApiKey]:
        def work(conn: Connection) -> list[ApiKey]:
            rows = conn.execute(select(api_keys).order_by(api_keys.c.created_at, api_keys.c.id)).mappings()
            return [_key(row) for row in rows]

        return await self._run(work)

    async def revoke(self, key_id: str, at: datetime) -> ApiKey | None:
        def work(conn: Connection) -> ApiKey | None:
            conn.execute(update(api_keys).where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
                         .values(revoked_at=at.timestamp()))
            row = conn.execute(select(api_keys).where(api_keys.c.id == key_id)).mappings().first()
            return _key(row) if row else None

        return await self._run(work)


def _time(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def _key(row: Any) -> ApiKey:
    return ApiKey(
        id=row["id"], name=row["name"], reply_queues=tuple(json.loads(row["reply_queues"])),
        created_at=_time(row["created_at"]),
        revoked_at=_time(row["revoked_at"]) if row["revoked_at"] is not None else None,
        daily_limit_usd=row["daily_limit_usd"],
    )
