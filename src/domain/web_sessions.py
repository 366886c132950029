"""A web app session: the browser holds only its random id (in an HttpOnly, SameSite=Strict
cookie); the server keeps the id of the API key it signed in with (never the key), its CSRF
token and a notice for the next page. How long sessions live, and when use is written down."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

IDLE_SECONDS = 8 * 3600  # a signed-in session unused this long is forgotten
ANONYMOUS_IDLE_SECONDS = 3600  # a session without a key (authentication off) lives shorter
TOUCH_SECONDS = 60  # use is written down at most this often: a page view is not a write each time
MAX_ANONYMOUS_SESSIONS = 10_000  # past this, the least recently used anonymous sessions go


@dataclass
class Session:
    id: str
    key_id: str | None  # None: not signed in (or authentication is off)
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    last_used: float = 0.0  # epoch seconds
    notice: str | None = None  # what the last form did, shown once by the page it redirected to

    def csrf_matches(self, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(presented.encode(), self.csrf.encode())

    def expired(self, now: float) -> bool:
        return now - self.last_used > (IDLE_SECONDS if self.key_id is not None else ANONYMOUS_IDLE_SECONDS)


def new_session(key_id: str | None, now: float) -> Session:
    """A session with a new random id and CSRF token."""
    return Session(id=secrets.token_urlsafe(32), key_id=key_id, last_used=now)


def session_digest(session_id: str) -> str:
    """What a store keeps in place of the id: a copy of its table gives no usable cookie."""
    return hashlib.sha256(session_id.encode()).hexdigest()
