"""Process start-up shared by the commands (settings, container, migrations), and a worker's run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from firmsift.adapters.files.classifiers import ClassifierFileError
from firmsift.adapters.files.site_signatures import SignatureFileError
from firmsift.domain.allowed_hosts import is_loopback, served_hosts
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.database_wait import upgrade_and_say
from firmsift.entrypoints.logs import configure_logging
from firmsift.entrypoints.settings import ConfigurationError, Settings
from firmsift.entrypoints.worker.probe import worker_probe
from firmsift.ports.infrastructure_errors import InvalidDatabaseUrl
from firmsift.services.provider_batches import run_provider_batches


def start_container(settings: Settings | None = None, *, migrate: bool = True) -> Container:
    """A container for these settings, with logging configured and (unless told not to) the
    schema brought up to date."""
    settings = settings or Settings()
    configure_logging(settings.log_level)
    container = Container(settings=settings)
    try:
        container.catalog()  # fail at start-up, not on the first job, if a classifier file is broken
        container.signatures()  # likewise for a signature file (it names file, entry and field)
        container.engine()  # a malformed database URL is a configuration error, not a crash
    except (ClassifierFileError, SignatureFileError, InvalidDatabaseUrl) as error:
        raise ConfigurationError(str(error)) from None
    if migrate:
        upgrade_and_say(container)
    return container


async def run_worker(container: Container, stop: asyncio.Event, *, probe: bool = False) -> None:
    """Run the container's worker until `stop` is set, and its provider batch rounds (economy
    mode) alongside; the HTTP clients it opened are closed as it ends. With `probe` and a
    configured port, also serve the worker's /healthz and /metrics."""
    settings = container.settings()
    async with container.http_clients(), contextlib.AsyncExitStack() as stack:
        worker = container.worker()
        if probe and settings.worker_probe_port is not None:
            checks = {"dns": container.dns_check} if settings.precheck else {}
            database_writes = container.database_writes()  # a SQLite file's: re-checked on each probe
            if database_writes is not None:
                checks["database_writes"] = database_writes
            await stack.enter_async_context(worker_probe(
                settings.worker_probe_host, settings.worker_probe_port, seconds_since_poll=worker.seconds_since_poll,
                stale_after=settings.wait_time + settings.visibility_timeout, metrics=container.metrics().exposition,
                checks=checks or None,
                # Checked as the API checks it: a probe on loopback answers its own names only.
                allowed_hosts=served_hosts(settings.allowed_hosts, settings.worker_probe_host,
                                           keys_required=not is_loopback(settings.worker_probe_host)),
            ))
        rounds_stop = asyncio.Event()
        rounds = asyncio.create_task(run_provider_batches(
            container.provider_batch_dependencies(), rounds_stop, settings.economy_poll_seconds))
        try:
            await worker.run(stop)
        finally:
            rounds_stop.set()  # the rounds end with the worker, also when it fails
            await rounds


@contextlib.asynccontextmanager
async def running_worker(container: Container) -> AsyncIterator[None]:
    """Runs a worker in the background of the current event loop (used by `firmsift serve`)."""
    stop = asyncio.Event()
    task = asyncio.create_task(run_worker(container, stop))
    try:
        yield
    finally:
        stop.set()
        await task
