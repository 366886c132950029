"""What every page of the web app shares: who is visiting (session and caller), CSRF checks,
rendering a template (autoescaped) with the session cookie, and redirects."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from firmsift.domain.batches import BatchNotFound
from firmsift.domain.keys import ANONYMOUS, Caller, NotAuthenticated
from firmsift.entrypoints.http.auth import Gate
from firmsift.domain.web_sessions import Session
from firmsift.ports.web_sessions import WebSessions

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).parent / "templates"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
COOKIE = "firmsift_session"


@dataclass
class Visitor:
    session: Session
    caller: Caller


Handler = Callable[[Request, Visitor], Awaitable[Response]]


class Site:
    """The web app's sessions and templates, on the API's gate (which says whether keys are required);
    `warning` (no worker can run, and the fix) is shown at the top of every page."""

    def __init__(self, gate: Gate, sessions: WebSessions, warning: str | None = None) -> None:
        self.gate = gate
        self.sessions = sessions
        self.warning = warning
        self._templates: Environment | None = None

    @property
    def templates(self) -> Environment:
        """The templates, every value autoescaped. jinja2 is imported on the first page served, so
        an API process nobody browses keeps its memory (BENCHMARKS.md: the API stays under 100 MB)."""
        if self._templates is None:
            from jinja2 import Environment, FileSystemLoader, select_autoescape

            self._templates = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True),
                                          trim_blocks=True, lstrip_blocks=True)
        return self._templates

    def page(self, handler: Handler, *, csrf: bool = False) -> Callable[[Request], Awaitable[Response]]:
        """A route for `handler`, called with the visitor: signed in (when keys are required; else
        sent to /login), its CSRF token checked when `csrf` (403 otherwise); another key's batch
        or none is a 404 page."""

        async def route(request: Request) -> Response:
            visitor = await self.visitor(request)
            if visitor is None:
                return RedirectResponse("/login", status_code=303)
            if csrf and not await self.csrf_presented(request, visitor.session):
                return await self.render(request, visitor.session, "error.html", status=403, title="Form expired",
                                   message="This form's security token is missing or stale: reload the page and try again.")
            try:
                return await handler(request, visitor)
            except BatchNotFound:
                return await self.render(request, visitor.session, "error.html", status=404, title="No such batch",
                                   message="There is no batch with this id among yours.")
            except NotAuthenticated:
                await self.sessions.end(visitor.session)
                return RedirectResponse("/login", status_code=303)

        return route

    async def visitor(self, request: Request) -> Visitor | None:
        """Who this is; None when keys are required and the session is not signed in (or its key was revoked)."""
        session = await self.sessions.find(request.cookies.get(COOKIE))
        if not self.gate.required:
            return Visitor(session or await self.sessions.start(None), ANONYMOUS)
        if session is None or session.key_id is None:
            return None
        try:
            return Visitor(session, await self.gate.key_caller(session.key_id))
        except NotAuthenticated:
            await self.sessions.end(session)
            return None

    async def csrf_presented(self, request: Request, session: Session) -> bool:
        """Whether the request carries the session's CSRF token: a form field, or a header for our script's requests."""
        presented = request.headers.get(CSRF_HEADER)
        if presented is None and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            presented = (await form_fields(request)).get(CSRF_FIELD)
        return session.csrf_matches(presented)

    async def render(self, request: Request, session: Session, template: str, *, status: int = 200,
                     **context: Any) -> HTMLResponse:
        notice = session.notice
        if notice is not None:
            await self.sessions.leave_notice(session, None)  # shown once
        # Off the event loop: a page of a wide batch's rows takes a while to render.
        html = await asyncio.to_thread(self.templates.get_template(template).render,
            csrf=session.csrf, signed_in=session.key_id is not None, auth=self.gate.required, notice=notice,
            warning=self.warning, **context)
        return self.with_cookie(request, HTMLResponse(html, status_code=status), session)

    def with_cookie(self, request: Request, response: Response, session: Session) -> Response:
        """The session cookie: HttpOnly (no script reads it), SameSite=Strict, Secure over TLS."""
        response.set_cookie(COOKIE, session.id, httponly=True, samesite="strict", path="/",
                            secure=request.url.scheme == "https")
        response.headers["cache-control"] = "no-store"
        return response


MAX_FORM_BYTES = 16_384


async def form_fields(request: Request) -> dict[str, str]:
    """A small urlencoded form's fields, read once per request (python-multipart is not a
    dependency: the app's forms are urlencoded; files go as a raw body from its script)."""
    if not hasattr(request.state, "form_fields"):
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                body = b""
                break
        request.state.form_fields = {name: values[0] for name, values in parse_qs(body.decode("utf-8", "replace")).items()}
    fields: dict[str, str] = request.state.form_fields
    return fields
