"""Signing in to the web app and out of it. Nothing is written before a key is accepted: the sign-in
form's CSRF token is signed, not stored (domain/sign_in_forms.py), held in a cookie and echoed by
the form, so showing the form and refusing an attempt cost no row; the session row is written when
a key is accepted, under a new id. Attempts are limited per client address."""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from firmsift.domain.keys import NotAuthenticated
from firmsift.domain.sign_in_forms import FORM_SECONDS, form_presented, issue_form_token, seconds_left
from firmsift.entrypoints.http.auth import client_network
from firmsift.entrypoints.http.rate_limit import RateLimited, TokenBuckets
from firmsift.entrypoints.web.site import COOKIE, CSRF_FIELD, Site, Visitor, form_fields

FORM_COOKIE = "firmsift_sign_in"
FORM_PATH = "/login"  # the only path the form's cookie is sent to
# Client addresses (IPv6: /64s) whose attempts are counted at once, the least recently seen
# forgotten first: a flood from many addresses costs bounded memory (~3 MB).
COUNTED_ADDRESSES = 10_000


def sign_in_routes(site: Site, *, attempts_per_minute: int, clock: Callable[[], float] | None = None) -> list[Route]:
    """GET and POST /login, POST /logout. `attempts_per_minute` per client address (0: no limit);
    `clock` (epoch seconds) times the forms and the limit: a test's, else the real time."""
    now = clock or time.time
    attempts = (TokenBuckets(attempts_per_minute, clock=clock or time.monotonic, max_buckets=COUNTED_ADDRESSES,
                             holder="sign-in attempts from this address")
                if site.gate.required and attempts_per_minute else None)

    async def form(request: Request, *, status: int = 200, error: str | None = None, fresh: bool = False,
                   retry_after: int | None = None) -> Response:
        """The sign-in page. Its token is the one the browser holds while that has half its time
        left (a second tab's form stays good), else a new one; `fresh` always a new one."""
        secret = await site.sessions.form_secret()
        token = request.cookies.get(FORM_COOKIE)
        if fresh or token is None or seconds_left(secret, token, now()) <= FORM_SECONDS / 2:
            token = issue_form_token(secret, now())
        html = site.templates.get_template("login.html").render(
            csrf=token, signed_in=False, auth=True, notice=None, warning=site.warning, title="Sign in", error=error)
        response = HTMLResponse(html, status_code=status, headers={"cache-control": "no-store"})
        if retry_after is not None:
            response.headers["retry-after"] = str(retry_after)
        response.set_cookie(FORM_COOKIE, token, max_age=FORM_SECONDS, path=FORM_PATH, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response

    async def login_page(request: Request) -> Response:
        if not site.gate.required:
            return RedirectResponse("/", status_code=303)
        session = await site.sessions.find(request.cookies.get(COOKIE))
        if session is not None and session.key_id is not None:
            return RedirectResponse("/", status_code=303)
        return await form(request)

    async def login(request: Request) -> Response:
        """Exchange an API key for a session: a new one (new id, new CSRF token) holding the key's id;
        the session the browser held before, if any, ends."""
        if not site.gate.required:
            return RedirectResponse("/", status_code=303)
        fields = await form_fields(request)
        secret = await site.sessions.form_secret()
        if not form_presented(secret, request.cookies.get(FORM_COOKIE), fields.get(CSRF_FIELD), now()):
            return await form(request, status=403, error="The sign-in form expired: please try again.", fresh=True)
        address = request.client.host if request.client else ""
        try:
            if attempts is not None:
                attempts.take(client_network(address))
            caller = await site.gate.caller({"x-api-key": fields.get("api_key", "").strip()}, address)
        except RateLimited as refused:
            return await form(request, status=429, retry_after=refused.retry_after,
                              error=f"Too many sign-in attempts: try again in {_seconds(refused.retry_after)}.")
        except NotAuthenticated:
            return await form(request, status=401, error="That API key is not valid (unknown or revoked).")
        held = await site.sessions.find(request.cookies.get(COOKIE))
        signed_in = await site.sessions.start(caller.owner, replacing=held)
        response = site.with_cookie(request, RedirectResponse("/", status_code=303), signed_in)
        response.delete_cookie(FORM_COOKIE, path=FORM_PATH, httponly=True, samesite="strict",
                               secure=request.url.scheme == "https")
        return response

    async def logout(request: Request, visitor: Visitor) -> Response:
        await site.sessions.end(visitor.session)
        response = RedirectResponse("/login" if site.gate.required else "/", status_code=303)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return response

    return [
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", site.page(logout, csrf=True), methods=["POST"]),
    ]


def _seconds(count: int) -> str:
    return "1 second" if count == 1 else f"{count} seconds"
