"""In-memory web sessions (tests and the in-memory harness): one process's dictionary, least
recently used first, bounded."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

from firmsift.domain.web_sessions import Session, new_session

MAX_SESSIONS = 10_000  # past this, the least recently used session is forgotten (bounded memory)


class InMemoryWebSessions:
    """Implements ports.web_sessions.WebSessions. Hands out copies, as a database would."""

    def __init__(self, clock: Callable[[], float] = time.time, capacity: int = MAX_SESSIONS) -> None:
        self.clock = clock
        self.capacity = capacity
        self._by_id: OrderedDict[str, Session] = OrderedDict()
        self._form_secret = secrets.token_bytes(32)

    async def find(self, session_id: str | None) -> Session | None:
        session = self._by_id.get(session_id or "")
        if session is None:
            return None
        if session.expired(self.clock()):
            del self._by_id[session.id]
            return None
        session.last_used = self.clock()
        self._by_id.move_to_end(session.id)
        return replace(session)

    async def start(self, key_id: str | None, replacing: Session | None = None) -> Session:
        if replacing is not None:
            await self.end(replacing)
        while len(self._by_id) >= self.capacity:
            self._by_id.popitem(last=False)
        session = new_session(key_id, self.clock())
        self._by_id[session.id] = session
        return replace(session)

    async def end(self, session: Session) -> None:
        self._by_id.pop(session.id, None)

    async def leave_notice(self, session: Session, notice: str | None) -> None:
        session.notice = notice
        if (kept := self._by_id.get(session.id)) is not None:
            kept.notice = notice

    async def form_secret(self) -> bytes:
        return self._form_secret
