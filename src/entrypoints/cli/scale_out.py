"""The copies `firmsift worker --processes N` and `firmsift api --workers N` start, and how they share.

Worker copies share the LLM's pacing through the database, FIRMSIFT_LLM_REQUESTS_PER_MINUTE a
ceiling for all of them together, so it is handed down as it is; they split the per-process
search budget (FIRMSIFT_SEARCH_REQUESTS_PER_MINUTE) evenly, so N copies together keep the
configured rate. Each keeps its own FIRMSIFT_LLM_CONCURRENCY. A fixed worker probe port P gives copy i the port P + i - 1.
API copies accept connections on one listening socket the parent binds and hands down.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping

from firmsift.entrypoints.cli.process_group import ChildCommand
from firmsift.entrypoints.settings import Settings

CLI_MODULE = "firmsift.entrypoints.cli.main"


def _firmsift(*args: str) -> list[str]:
    return [sys.executable, "-m", CLI_MODULE, *args]


def worker_copies(settings: Settings, count: int, environ: Mapping[str, str] = os.environ) -> list[ChildCommand]:
    """`count` worker commands, each with its share of the search budget and its own probe port
    (the LLM's pacing and its ceiling are shared through the database, not split)."""
    shared = dict(environ)
    if settings.search_requests_per_minute:
        shared["FIRMSIFT_SEARCH_REQUESTS_PER_MINUTE"] = repr(settings.search_requests_per_minute / count)
    commands = []
    for number in range(count):
        env = dict(shared)
        if settings.worker_probe_port:  # 0 (any free port) and None (no probe) stay as they are
            env["FIRMSIFT_WORKER_PROBE_PORT"] = str(settings.worker_probe_port + number)
        commands.append(ChildCommand(_firmsift("worker"), env))
    return commands


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """The socket every API copy accepts on, bound by the parent; inheritable by its children."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, port), family=family, backlog=backlog)
    listener.set_inheritable(True)
    return listener


def api_copies(host: str, port: int, listener: socket.socket, count: int,
               environ: Mapping[str, str] = os.environ) -> list[ChildCommand]:
    """`count` API commands serving `listener` (bound to host:port, given for auth checks and logs)."""
    fd = listener.fileno()
    argv = _firmsift("api", "--host", host, "--port", str(port), "--listen-fd", str(fd))
    return [ChildCommand(argv, dict(environ), pass_fds=(fd,)) for _ in range(count)]
