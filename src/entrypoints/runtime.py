"""Process start-up shared by the commands: settings, container, migrations, the worker's wiring."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from firmsift.adapters.sql_migrations import upgrade
from firmsift.domain.process import Classification
from firmsift.entrypoints.container import Container
from firmsift.entrypoints.logs import configure_logging
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.worker import Worker, WorkerConfig


def start_container(settings: Settings | None = None) -> Container:
    """A container for these settings, with logging configured and the schema up to date."""
    settings = settings or Settings()
    configure_logging(settings.log_level)
    container = Container(settings=settings)
    container.catalog()  # fail at start-up, not on the first job, if a classifier file is broken
    upgrade(container.engine())
    return container


def build_worker(container: Container) -> Worker:
    settings = container.settings()
    store = container.store()
    classification = Classification(
        jobs=store, answers=store, known=store, search=container.search(), llm=container.llm(),
        catalog=container.catalog(), llm_slots=asyncio.Semaphore(settings.llm_concurrency),
        domain_concurrency=settings.domain_concurrency,
    )
    config = WorkerConfig(wait_time=settings.wait_time, visibility_timeout=settings.visibility_timeout,
                          max_job_seconds=settings.max_job_seconds, max_jobs=settings.worker_jobs)
    return Worker(container.work_queue(), container.replies(), classification, config)


async def run_worker(container: Container, stop: asyncio.Event) -> None:
    """Run a worker until `stop` is set, then close its provider clients."""
    worker = build_worker(container)
    try:
        await worker.run(stop)
    finally:
        search = worker.classification.search
        if hasattr(search, "aclose"):
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
