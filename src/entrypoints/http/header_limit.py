"""Refuses requests whose headers are too large (431) before any route or key lookup sees them."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from firmsift.entrypoints.http.errors import error_body


class HeaderLimit:
    """ASGI middleware. uvicorn already bounds the buffer of a request head still arriving
    (`h11_max_incomplete_event_size`), but a head that arrives whole can exceed that bound;
    this check covers every request and answers in the contract's JSON error shape."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            # As on the wire: "name: value\r\n" for each header.
            size = sum(len(name) + len(value) + 4 for name, value in scope["headers"])
            if size > self.max_bytes:
                response = JSONResponse(
                    error_body("headers_too_large", f"request headers exceed {self.max_bytes} bytes"),
                    status_code=431)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
