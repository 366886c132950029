"""The worker's probe: a tiny HTTP endpoint with /healthz (the loop is turning), /readyz (its own
checks: "ok", or "degraded: why", which still counts as ready) and /metrics, which, as the API's,
answers only the host names it is configured for (a page whose DNS name is rebound to the probe's
loopback address would read it otherwise)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping

from firmsift.domain.allowed_hosts import host_name
from firmsift.entrypoints.check_results import counts_as_ready

log = logging.getLogger(__name__)
MAX_REQUEST_BYTES = 8192
JSON = "application/json"


@contextlib.asynccontextmanager
async def worker_probe(host: str, port: int, *, seconds_since_poll: Callable[[], float], stale_after: float,
                       metrics: Callable[[], tuple[bytes, str]],
                       checks: Mapping[str, Callable[[], str]] | None = None,
                       allowed_hosts: frozenset[str] | None = None) -> AsyncIterator[int]:
    """Serve the probe while the block runs; yields the bound port (useful with port 0). /metrics
    asked for naming a host outside `allowed_hosts` (None: any) is 421."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, path, *_ = request_line.split(" ")
            hosts = [line.split(":", 1)[1].strip() for line in header_lines if line.lower().startswith("host:")]
            if path == "/metrics" and allowed_hosts is not None and not (
                    len(hosts) == 1 and host_name(hosts[0]) in allowed_hosts):
                status, body, content_type = 421, b'{"error": "host not allowed (FIRMSIFT_ALLOWED_HOSTS)"}', JSON
            else:
                status, body, content_type = _respond(method, path, seconds_since_poll, stale_after, metrics,
                                                      checks or {})
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError, ValueError):
            status, body, content_type = 400, b'{"error": "bad request"}', JSON
        head = (f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        writer.write(head.encode("latin-1") + body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, host, port, limit=MAX_REQUEST_BYTES)
    bound = server.sockets[0].getsockname()[1]
    log.info("worker probe listening", extra={"host": host, "port": bound})
    try:
        yield bound
    finally:
        server.close()
        await server.wait_closed()


def _respond(method: str, path: str, seconds_since_poll: Callable[[], float], stale_after: float,
             metrics: Callable[[], tuple[bytes, str]], checks: Mapping[str, Callable[[], str]]) -> tuple[int, bytes, str]:
    if method != "GET":
        return 405, b'{"error": "method not allowed"}', "application/json"
    if path == "/healthz":
        age = seconds_since_poll()
        healthy = age <= stale_after
        body = json.dumps({"status": "ok" if healthy else "stuck", "seconds_since_poll": round(age, 1)})
        return (200 if healthy else 503), body.encode(), "application/json"
    if path == "/readyz":
        results = {name: check() for name, check in checks.items()}
        ready = all(counts_as_ready(result) for result in results.values())
        body = json.dumps({"status": "ready" if ready else "not ready", "checks": results})
        return (200 if ready else 503), body.encode(), "application/json"
    if path == "/metrics":
        body, content_type = metrics()
        return 200, body, content_type
    return 404, b'{"error": "not found"}', "application/json"
