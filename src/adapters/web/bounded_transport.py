"""An httpx transport that reads every response body within limits, for clients whose reading
we do not write ourselves (the OpenAI client inside litellm).

Each response is read whole, raw and bounded (`web.bounded_body.read_body`), then handed up
already decoded, so the client's own decoders, which inflate a whole network read at once,
never see compressed bytes. A body over the limits raises UnreadableBody from the transport:
the client wraps it as a connection error, with UnreadableBody down its chain of causes.
Redirect bodies pass through here too, since the transport sits below redirect handling.
"""

from __future__ import annotations

import asyncio
import functools
import http.cookiejar
import weakref
from collections.abc import Callable

import httpx
from httpx._utils import get_environment_proxies  # what httpx itself reads; litellm reads it the same way

from firmsift.adapters.web.bounded_body import ACCEPT_ENCODING, BodyLimits, read_body

# Headers that described the body as sent; the body handed up is decoded and whole.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class BoundedTransport(httpx.AsyncBaseTransport):
    """Wraps the transport `make_inner` builds, one per event loop: a connection pool belongs
    to the loop that opened its connections, and one client may be shared by several loops
    (litellm keeps its clients per loop, but this one is set process-wide)."""

    def __init__(self, make_inner: Callable[[], httpx.AsyncBaseTransport], limits: BodyLimits) -> None:
        self._make_inner = make_inner
        self._limits = limits
        self._inner: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncBaseTransport] = (
            weakref.WeakKeyDictionary())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._for_this_loop().handle_async_request(request)
        try:
            raw = httpx.Response(response.status_code, headers=response.headers, stream=response.stream,
                                 request=request)
            body = await read_body(raw, self._limits, cut=False)
        finally:
            await response.aclose()
        headers = [(name, value) for name, value in response.headers.multi_items()
                   if name.lower() not in _WIRE_HEADERS]
        return httpx.Response(response.status_code, headers=headers, content=body, request=request,
                              extensions=response.extensions)

    async def aclose(self) -> None:
        inner = self._inner.pop(asyncio.get_running_loop(), None)
        if inner is not None:
            await inner.aclose()

    def _for_this_loop(self) -> httpx.AsyncBaseTransport:
        loop = asyncio.get_running_loop()
        inner = self._inner.get(loop)
        if inner is None:
            inner = self._inner[loop] = self._make_inner()
        return inner


def bounded_client(limits: BodyLimits, make_inner: Callable[[], httpx.AsyncBaseTransport], *,
                   proxy_for: Callable[[str], httpx.AsyncBaseTransport] | None = None) -> httpx.AsyncClient:
    """An httpx client reading every response within `limits` through the transports
    `make_inner` builds (one per event loop). It advertises only the encodings the reader
    decodes and keeps no cookies. With `proxy_for`, the environment's HTTP(S)_PROXY and
    NO_PROXY are honoured as httpx itself does (an explicit transport turns httpx's own reading
    of them off), each proxy reached through `proxy_for(url)`, bounded the same way."""
    mounts: dict[str, httpx.AsyncBaseTransport | None] = {}
    if proxy_for is not None:
        mounts = {pattern: None if url is None else BoundedTransport(functools.partial(proxy_for, url), limits)
                  for pattern, url in get_environment_proxies().items()}
    return httpx.AsyncClient(transport=BoundedTransport(make_inner, limits), mounts=mounts, follow_redirects=True,
                             headers={"Accept-Encoding": ACCEPT_ENCODING}, cookies=_no_cookies())


def _no_cookies() -> http.cookiejar.CookieJar:
    return http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
