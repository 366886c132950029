"""What the HTTP front door (the API and the web app) is built from: one object."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from firmsift.entrypoints.settings import Settings
from firmsift.services.api import Api

LOOPBACK = "127.0.0.1"  # where `firmsift serve` listens unless told otherwise


@dataclass(frozen=True)
class HttpFrontDoor:
    """The API's application object, the settings, and how this process serves it.

    `host` is the address it will be served on: it decides whether FIRMSIFT_AUTH=auto requires
    keys, and UnsafeAuthSetting refuses FIRMSIFT_AUTH=off on an address other hosts can reach;
    without keys, it is one of the host names requests may name (FIRMSIFT_ALLOWED_HOSTS).
    `background` runs alongside the app (the embedded worker of `firmsift serve`).
    `process_checks` are this process's own checks beyond its backends (name: a call giving "ok",
    "degraded: why", which still counts as ready, or what failed), reported by /readyz.
    `worker_problem` says why no worker can run (`serve` without LLM credentials): every 202, job
    and batch document and web page then carries it as `warning`, with the fix.
    `clock` (a test's; else the real time) times the web app's sign-in forms and their limit."""

    api: Api
    settings: Settings
    host: str = LOOPBACK
    background: Callable[[], AbstractAsyncContextManager[None]] | None = None
    process_checks: Mapping[str, Callable[[], str]] | None = None
    worker_problem: str | None = None
    clock: Callable[[], float] | None = None

    @property
    def warning(self) -> str | None:
        return f"no worker can run, so jobs wait in the queue: {self.worker_problem}" if self.worker_problem else None
