"""The HTTP front door on uvicorn, within the connection limits: `firmsift serve` (with a worker
beside it) and `firmsift api`, and each copy of `api --workers N`."""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable

from firmsift.entrypoints.command_errors import EXIT_FAILURE, EXIT_OK, CommandError
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.llm_credentials import NO_CREDENTIALS, READINESS_CHECK, llm_credentials_problem
from firmsift.entrypoints.wiring.runtime import running_worker

REQUEST_LINE_ROOM = 8192  # the method, URL and version before the headers (as nginx's default buffer)
FD_RESERVE = 64  # file descriptors kept free of client connections: listener, SQLite files, logs, the worker's clients
# Connections asyncio accepts in one go before the cap sees any of them (uvicorn's default is 2048).
# Refused connections hold their descriptor for a few loop turns, during which more bursts may
# arrive: ACCEPT_BURSTS of them are kept free, so a flood is refused with 503, not met with EMFILE
# (on which asyncio logs and retries once per connection of the burst).
ACCEPT_BACKLOG = 128
ACCEPT_BURSTS = 4


def serve(container: Container, host: str, port: int, *, with_worker: bool, listen_fd: int | None = None) -> int:
    import uvicorn

    from firmsift.entrypoints.http.protocol import ConnectionLimits, connection_cap, guarded_protocol

    # The routes that take a file (a batch, the web app's upload): an idle deadline, not one for the whole body.
    uploads = frozenset({"/batches", "/new/check", "/new/submit"})

    llm_problem = llm_credentials_problem(container.settings()) if with_worker else None
    if llm_problem is not None:
        # The API still accepts jobs (they wait in the queue), but no worker runs and /readyz says why.
        logging.getLogger(__name__).error(f"no worker started, jobs wait in the queue: {llm_problem}")
        with_worker = False
    if with_worker:
        container.worker_llm()  # import litellm (seconds) now, not on the loop serving requests
    background = (lambda: running_worker(container)) if with_worker else None
    checks: dict[str, Callable[[], str]] = {READINESS_CHECK: lambda: NO_CREDENTIALS} if llm_problem else {}
    if with_worker and container.settings().precheck:
        checks["dns"] = container.dns_check  # the embedded worker's pre-check: does it trust negative DNS answers?
    app = container.api(background=background, host=host, process_checks=checks,  # auth was checked in dispatch
                        worker_problem=llm_problem)
    settings = container.settings()
    logging.getLogger(__name__).info(f"the web app: open {web_address(host, port)} in a browser")
    # uvicorn handles SIGTERM/SIGINT: stops accepting, drains requests, then runs the lifespan's exit.
    # Its bound on a request head still arriving (request line + headers) keeps a slow sender from
    # filling memory; the app itself answers 431 for headers over max_header_bytes. The protocol
    # class adds what uvicorn lacks: deadlines for a request's head and body, and a connection cap.
    limits = ConnectionLimits(
        header_timeout=settings.header_timeout, body_timeout=settings.body_timeout,
        upload_idle_timeout=settings.upload_idle_timeout, min_upload_rate=settings.min_upload_rate, upload_paths=uploads,
        max_connections=connection_cap(settings.max_connections,
                                       reserved=FD_RESERVE + ACCEPT_BURSTS * ACCEPT_BACKLOG + settings.db_pool_size
                                       + settings.db_max_overflow))
    options = dict(host=host, port=port, log_config=None, http=guarded_protocol(limits), backlog=ACCEPT_BACKLOG,
                   timeout_keep_alive=settings.keep_alive_timeout,
                   timeout_graceful_shutdown=settings.shutdown_grace_seconds,
                   h11_max_incomplete_event_size=settings.max_header_bytes + REQUEST_LINE_ROOM)
    if listen_fd is None:
        try:
            uvicorn.run(app, **options)  # type: ignore[arg-type]
        except SystemExit as stopped:  # uvicorn's own exit (3) when it could not start: say why, exit 1
            if stopped.code in (0, None):
                raise
            raise CommandError(why_not_listening(host, port)) from None
        return EXIT_OK
    # One of `api --workers N`'s processes: accept on the socket the parent bound.
    server = uvicorn.Server(uvicorn.Config(app, **options))  # type: ignore[arg-type]
    server.run(sockets=[socket.socket(fileno=listen_fd)])
    return EXIT_OK if server.started else EXIT_FAILURE


def why_not_listening(host: str, port: int) -> str:
    """Why the server did not start, as one line: above all, the address taken by another process."""
    try:
        with socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET):
            pass
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            return (f"cannot listen on {host}:{port}: the address is in use (another firmsift serve?); choose "
                    "another port with --port, or --port 0 for any free one")
        return f"cannot listen on {host}:{port}: {error.strerror or error}"
    return "the server did not start; the log above says why"


def web_address(host: str, port: int) -> str:
    """Where a browser on this machine finds the web app (`--port 0`: the port uvicorn announces next)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" if port else f"http://{shown}:<the port uvicorn announces below>/"
