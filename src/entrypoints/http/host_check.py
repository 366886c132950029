"""Refuses, with 421, a request whose Host header names no host the API answers for
(FIRMSIFT_ALLOWED_HOSTS). Without API keys the loopback address is the only guard, and DNS
rebinding walks past it: a page at attacker.example whose name then points at 127.0.0.1 is
same-origin with the API and the web app, CSRF tokens included, but its requests still say
`Host: attacker.example`.

Starlette's TrustedHostMiddleware does not fit: it answers a plain-text 400 that names no setting,
cannot leave the health probes out, and does not read a trailing dot as the same name."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from firmsift.domain.allowed_hosts import host_name
from firmsift.entrypoints.http.errors import error_body

# Answered whatever the Host: orchestrators probe them by the pod's address, which no list of
# names foresees, and they tell a page nothing (a status and check names, never an error's text).
# /metrics is not among them: it shows traffic and spend.
UNCHECKED_PATHS = frozenset({"/healthz", "/readyz"})
SHOWN_CHARS = 100  # of a refused Host, echoed in the message


class HostCheck:
    """ASGI middleware: a request naming a host outside `allowed` (None: any) gets 421
    host_not_allowed, in the contract's JSON error shape, before any route sees it; so does one
    with no Host header, or several."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str] | None) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allowed is None or scope["type"] not in ("http", "websocket") or scope["path"] in UNCHECKED_PATHS:
            await self.app(scope, receive, send)
            return
        hosts = [value.decode("latin-1") for name, value in scope["headers"] if name == b"host"]
        if len(hosts) == 1 and host_name(hosts[0]) in self.allowed:
            await self.app(scope, receive, send)
            return
        if len(hosts) == 1:
            shown = hosts[0] if len(hosts[0]) <= SHOWN_CHARS else hosts[0][:SHOWN_CHARS] + "…"
            why = f"this server does not answer for the host {shown!r} (the Host header)"
        else:
            why = f"the request has {'no Host header' if not hosts else 'several Host headers'}"
        message = f"{why}: FIRMSIFT_ALLOWED_HOSTS lists the host names it answers for"
        await JSONResponse(error_body("host_not_allowed", message), status_code=421)(scope, receive, send)
