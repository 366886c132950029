"""SQLAlchemy web sessions (SQLite and PostgreSQL), shared by every API process. A row is keyed by
the SHA-256 of the session id, so the table gives no usable cookie to whoever reads it. The sign-in
forms' secret is a row of web_secrets, made by migration 0020 and only ever read here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, delete, insert, or_, select, update

from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.tables import web_secrets, web_sessions
from firmsift.domain.web_sessions import (
    ANONYMOUS_IDLE_SECONDS,
    IDLE_SECONDS,
    MAX_ANONYMOUS_SESSIONS,
    TOUCH_SECONDS,
    Session,
    new_session,
    session_digest,
)

T = TypeVar("T")
FORM_SECRET = "sign_in_forms"  # its row in web_secrets


class SqlWebSessions:
    """Implements ports.web_sessions.WebSessions. Starting a session also forgets the idle ones,
    and the oldest anonymous ones past MAX_ANONYMOUS_SESSIONS (with authentication off, a flood of
    cookie-less pages stays bounded; with it on, no session is started before a sign-in)."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock
        self._form_secret: bytes | None = None

    async def _run(self, work: Callable[[Connection], T]) -> T:
        return await in_transaction(self.engine, work)

    async def find(self, session_id: str | None) -> Session | None:
        if not session_id:
            return None
        digest, now = session_digest(session_id), self.clock()

        def work(conn: Connection) -> Session | None:
            row = conn.execute(select(web_sessions).where(web_sessions.c.id_digest == digest)).mappings().first()
            if row is None:
                return None
            session = _session(session_id, row)
            if session.expired(now):
                conn.execute(delete(web_sessions).where(web_sessions.c.id_digest == digest))
                return None
            if now - session.last_used >= TOUCH_SECONDS:
                conn.execute(update(web_sessions).where(web_sessions.c.id_digest == digest).values(last_used=now))
                session.last_used = now
            return session

        return await self._run(work)

    async def start(self, key_id: str | None, replacing: Session | None = None) -> Session:
        now = self.clock()
        session = new_session(key_id, now)

        def work(conn: Connection) -> None:
            if replacing is not None:
                conn.execute(delete(web_sessions).where(web_sessions.c.id_digest == session_digest(replacing.id)))
            anonymous = web_sessions.c.key_id.is_(None)
            conn.execute(delete(web_sessions).where(or_(
                web_sessions.c.last_used < now - IDLE_SECONDS,
                anonymous & (web_sessions.c.last_used < now - ANONYMOUS_IDLE_SECONDS))))
            if key_id is None:
                oldest_kept = (select(web_sessions.c.last_used).where(anonymous)
                               .order_by(web_sessions.c.last_used.desc()).offset(MAX_ANONYMOUS_SESSIONS - 1).limit(1)
                               .scalar_subquery())
                conn.execute(delete(web_sessions).where(anonymous, web_sessions.c.last_used <= oldest_kept))
            conn.execute(insert(web_sessions).values(id_digest=session_digest(session.id), key_id=key_id,
                                                     csrf=session.csrf, notice=None, last_used=now))

        await self._run(work)
        return session

    async def end(self, session: Session) -> None:
        await self._run(lambda conn: conn.execute(
            delete(web_sessions).where(web_sessions.c.id_digest == session_digest(session.id))))

    async def leave_notice(self, session: Session, notice: str | None) -> None:
        session.notice = notice
        await self._run(lambda conn: conn.execute(
            update(web_sessions).where(web_sessions.c.id_digest == session_digest(session.id)).values(notice=notice)))

    async def form_secret(self) -> bytes:
        if self._form_secret is None:  # read once per process: it never changes
            found = await self._run(lambda conn: conn.execute(
                select(web_secrets.c.secret).where(web_secrets.c.name == FORM_SECRET)).scalar_one())
            self._form_secret = bytes.fromhex(found)
        return self._form_secret


def _session(session_id: str, row: Any) -> Session:
    return Session(id=session_id, key_id=row["key_id"], csrf=row["csrf"], last_used=row["last_used"],
                   notice=row["notice"])
