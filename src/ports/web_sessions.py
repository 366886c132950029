"""The web app's session store: shared by every API process (`firmsift api --workers N`), so a
browser signed in through one is signed in through all; and the secret their sign-in forms share."""

from __future__ import annotations

from typing import Protocol

from firmsift.domain.web_sessions import Session


class WebSessions(Protocol):
    async def find(self, session_id: str | None) -> Session | None:
        """The live session with this id, its use written down (at most every TOUCH_SECONDS), or
        None: unknown, ended, or idle past its limit."""

    async def start(self, key_id: str | None, replacing: Session | None = None) -> Session:
        """A new session (new id and CSRF token) for `key_id`; the one it replaces ends."""

    async def end(self, session: Session) -> None:
        """Forget the session (sign-out, a revoked key)."""

    async def leave_notice(self, session: Session, notice: str | None) -> None:
        """Keep `notice` for the session's next page (None: it was shown)."""

    async def form_secret(self) -> bytes:
        """The secret the sign-in form's tokens are signed with (domain/sign_in_forms.py): the same
        for every API process on this store, made once (not per request), so showing the form
        writes nothing."""
