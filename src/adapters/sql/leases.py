"""Answer leases in the database, so workers on other machines do not ask the LLM twice at once."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, text

from firmsift.adapters.sql.engine import in_transaction

# Targets the primary key answer_leases (domain, classifier). The WHERE makes the update happen
# only when the current lease has lapsed or is already ours, so exactly one worker wins.
TAKE_LEASE = text("""
    INSERT INTO answer_leases (domain, classifier, holder, expires_at)
    VALUES (:domain, :classifier, :holder, :expires_at)
    ON CONFLICT (domain, classifier) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
    WHERE answer_leases.expires_at <= :now OR answer_leases.holder = excluded.holder
""")
LEASE_HOLDER = text("SELECT holder FROM answer_leases WHERE domain = :domain AND classifier = :classifier")
GIVE_UP_LEASE = text(
    "DELETE FROM answer_leases WHERE domain = :domain AND classifier = :classifier AND holder = :holder"
)


class SqlLeases:
    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    async def acquire(self, domain: str, classifier: str, holder: str, ttl_seconds: float) -> bool:
        now = self.clock()

        def take(conn: Connection) -> bool:
            conn.execute(TAKE_LEASE, {"domain": domain, "classifier": classifier, "holder": holder,
                                      "expires_at": now + ttl_seconds, "now": now})
            # Read back rather than trust rowcount, whose meaning for upserts differs by driver.
            owner = conn.execute(LEASE_HOLDER, {"domain": domain, "classifier": classifier}).scalar()
            return owner == holder

        return await in_transaction(self.engine, take)

    async def release(self, domain: str, classifier: str, holder: str) -> None:
        await in_transaction(self.engine, lambda conn: conn.execute(
            GIVE_UP_LEASE, {"domain": domain, "classifier": classifier, "holder": holder}))
