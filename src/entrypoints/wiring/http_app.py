"""The HTTP front door as one ASGI app: the JSON API (entrypoints/http) and the web app
(entrypoints/web) on one gate, one backend deadline and one queue of upload passes, with their
middleware. Assembled here so that neither package imports the other's routes."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect

from firmsift.domain.allowed_hosts import served_hosts
from firmsift.entrypoints.http.api_routes import api_routes, client_disconnected
from firmsift.entrypoints.http.auth import Gate, auth_required
from firmsift.entrypoints.http.backend_deadline import backend_deadline
from firmsift.entrypoints.http.body_passes import BodyPasses
from firmsift.entrypoints.http.errors import EXCEPTION_HANDLERS
from firmsift.entrypoints.http.front_door import HttpFrontDoor
from firmsift.entrypoints.http.header_limit import HeaderLimit
from firmsift.entrypoints.http.host_check import HostCheck
from firmsift.entrypoints.http.openapi import openapi_document
from firmsift.entrypoints.http.rate_limit import TokenBuckets
from firmsift.entrypoints.web.routes import web_routes
from firmsift.entrypoints.web.security import SecurityHeaders


def create_app(door: HttpFrontDoor) -> Starlette:
    """The ASGI app of `door` (wiring/http.py builds the door): the JSON API and, at `/`, the web
    app, on one gate of keys and rate limits."""
    settings, api = door.settings, door.api
    keys_required = auth_required(settings.auth, door.host)
    limiter = TokenBuckets(settings.rate_limit_per_minute) if keys_required and settings.rate_limit_per_minute else None
    failures = (TokenBuckets(settings.auth_failures_per_minute, holder="unknown API keys from this address")
                if keys_required and settings.auth_failures_per_minute else None)
    gate = Gate(api.api_keys if keys_required else None, limiter, failures)
    allowed_hosts = served_hosts(settings.allowed_hosts, door.host, keys_required)
    document = openapi_document(
        auth_required=keys_required, hosts_checked=allowed_hosts is not None, classifiers=api.catalog,
        max_domains=settings.max_domains_per_job,
        max_body_bytes=settings.max_body_bytes, max_header_bytes=settings.max_header_bytes,
        max_batch_domains=settings.max_domains_per_batch, max_batch_body_bytes=settings.max_batch_body_bytes,
    )
    deadline = backend_deadline(settings.backend_timeout)
    passes = BodyPasses()  # one for the API's and the web app's uploads alike

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if door.background is not None:
                await stack.enter_async_context(door.background())
            yield

    routes = [
        *api_routes(api, settings=settings, gate=gate, backend_deadline=deadline, passes=passes, document=document,
                    process_checks=door.process_checks, warning=door.warning),
        *web_routes(api, settings=settings, gate=gate, deadline=deadline, passes=passes, warning=door.warning,
                    clock=door.clock),
    ]
    handlers = {**EXCEPTION_HANDLERS, ClientDisconnect: client_disconnected}
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan,
                     middleware=[Middleware(HeaderLimit, max_bytes=settings.max_header_bytes),
                                 Middleware(SecurityHeaders),  # on the 421 below too
                                 Middleware(HostCheck, allowed=allowed_hosts)])
