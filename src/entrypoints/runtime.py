"""Process start-up shared by the commands: settings, container, migrations, the worker's wiring."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import AsyncIterator

from firmsift.adapters.classifier_files import ClassifierFileError
from firmsift.entrypoints.container import Container
from firmsift.entrypoints.logs import configure_logging
from firmsift.entrypoints.settings import ConfigurationError, Settings
from firmsift.entrypoints.worker import Worker, WorkerConfig
from firmsift.entrypoints.worker_probe import worker_probe
from firmsift.ports.closable import Closable
from firmsift.ports.database_errors import InvalidDatabaseUrl
from firmsift.services.process import JobDependencies


def start_container(settings: Settings | None = None, *, migrate: bool = True) -> Container:
    """A container for these settings, with logging configured and (unless told not to) the
    schema brought up to date."""
    settings = settings or Settings()
    configure_logging(settings.log_level)
    container = Container(settings=settings)
    try:
        container.catalog()  # fail at start-up, not on the first job, if a classifier file is broken
        container.engine()  # a malformed database URL is a configuration error, not a crash
    except (ClassifierFileError, InvalidDatabaseUrl) as error:
        raise ConfigurationError(str(error)) from None
    if migrate:
        container.migrate()
    return container


def build_worker(container: Container) -> Worker:
    """A worker whose LLM, search and queue calls are counted and timed."""
    settings = container.settings()
    store = container.store()
    metrics = container.metrics()
    deps = JobDependencies(
        jobs=store, answers=store, known=store, search=container.worker_search(),
        llm=container.worker_llm(), catalog=container.catalog(),
        llm_slots=asyncio.Semaphore(settings.llm_concurrency), domain_concurrency=settings.domain_concurrency,
        on_result=metrics.count_domain, leases=container.leases(), lease_seconds=settings.answer_lease_seconds,
        lease_holder=f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}",
    )
    config = WorkerConfig(wait_time=settings.wait_time, visibility_timeout=settings.visibility_timeout,
                          max_job_seconds=settings.max_job_seconds, max_jobs=settings.worker_jobs,
                          dead_letter_check_interval=settings.dead_letter_check_interval,
                          shutdown_grace=settings.shutdown_grace_seconds)
    return Worker(container.worker_queue(), container.replies(), deps, config,
                  on_job_finished=metrics.count_job, dead_letters=container.dead_letters(),
                  on_dead_lettered=lambda _job: metrics.dead_lettered.inc())


async def run_worker(container: Container, stop: asyncio.Event, *, probe: bool = False) -> None:
    """Run a worker until `stop` is set, then close its provider clients. With `probe` and a
    configured port, also serve the worker's /healthz and /metrics."""
    settings = container.settings()
    worker = build_worker(container)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if probe and settings.worker_probe_port is not None:
                await stack.enter_async_context(worker_probe(
                    settings.worker_probe_host, settings.worker_probe_port, last_poll=lambda: worker.last_poll,
                    stale_after=settings.wait_time + settings.visibility_timeout, metrics=container.metrics().exposition,
                ))
            await worker.run(stop)
    finally:
        search = worker.deps.search
        if isinstance(search, Closable):
            await search.aclose()


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
