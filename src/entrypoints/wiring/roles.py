"""The CLI's one handle on the wiring: each front door's object, built from the settings, and the
processes a command runs. Nothing outside the wiring holds the container itself."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass

from firmsift.adapters.llm.endpoint import api_base_host, is_local_api_base
from firmsift.adapters.sql.revisions import SqlRevisions
from firmsift.adapters.sqs.queue_spec import QueueSpecError
from firmsift.domain.model import Classifier
from firmsift.entrypoints.command_errors import CommandError
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.database_wait import DatabaseUnreachable, migrate_when_reachable
from firmsift.entrypoints.wiring.runtime import run_worker, start_container
from firmsift.entrypoints.wiring.serving import serve
from firmsift.ports.infrastructure_errors import DatabaseReadOnly, QueueUnavailable
from firmsift.ports.providers import LLM, Pricing
from firmsift.ports.reply_reading import ReplyReading
from firmsift.ports.schema import SchemaRevisions
from firmsift.services.admin import Admin


@dataclass(frozen=True)
class LlmProbe:
    """What `firmsift llm check` asks with: the configured LLM itself (no retry, no pacing), its
    prices, the classifiers, the HTTP clients to close on the loop that used them, and where
    the calls go (`endpoint`: "host (local)", "host (remote)" or the provider's default)."""

    catalog: Mapping[str, Classifier]
    llm: LLM
    pricing: Pricing
    clients: contextlib.AsyncExitStack
    endpoint: str


class Roles:
    """What one `firmsift` command is given. Each object is built on first use; `close()` closes
    what they opened (the database engine, the SQS client)."""

    def __init__(self, container: Container) -> None:
        self._container = container

    @property
    def settings(self) -> Settings:
        return self._container.settings()

    def admin(self) -> Admin:
        return self._container.admin()

    def revisions(self) -> SchemaRevisions:
        return SqlRevisions(self._container.engine)

    def replies(self, queue: str) -> ReplyReading:
        return self._container.reply_reader(queue)

    def declared_queues(self, *, apply: bool) -> list[str]:
        """The declared SQS queues checked (or, with `apply`, created and brought in line): one
        line each. CommandError when the declaration is wrong or SQS cannot be reached."""
        try:
            return self._container.declared_queues(apply=apply)
        except (QueueSpecError, OSError, QueueUnavailable) as error:  # QueueUnavailable: SQS unreachable or refusing
            raise CommandError(str(error)) from None

    def llm_probe(self) -> LlmProbe:
        base = self.settings.llm_api_base
        host = api_base_host(base)
        endpoint = f"{host} ({'local' if is_local_api_base(base) else 'remote'})" if host \
            else "the provider's default endpoint"
        return LlmProbe(self._container.catalog(), self._container.llm(), self._container.pricing(),
                        self._container.http_clients(), endpoint)

    def wait_for_database(self) -> None:
        """A long-running process waits for a database not up yet, then migrates it. CommandError
        (exit 1) when it stays away, or is read-only (refused before SQLite opens the file)."""
        try:
            migrate_when_reachable(self._container)
        except (DatabaseUnreachable, DatabaseReadOnly) as error:
            raise CommandError(str(error)) from None

    def serve(self, host: str, port: int, *, with_worker: bool, listen_fd: int | None = None) -> int:
        """The HTTP front door on uvicorn until stopped (wiring/serving.py), a worker beside it for `serve`."""
        return serve(self._container, host, port, with_worker=with_worker, listen_fd=listen_fd)

    async def run_worker(self, stop: asyncio.Event) -> None:
        """A worker, its provider batch rounds and its probe, until `stop` is set."""
        await run_worker(self._container, stop, probe=True)

    def close(self) -> None:
        self._container.shutdown_resources()


def started(settings: Settings, *, migrate: bool) -> Roles:
    """The roles of a command on the database: logging configured, the classifier and signature
    files and the database URL checked, and (with `migrate`) the schema brought up to date."""
    return Roles(start_container(settings, migrate=migrate))


def without_database(settings: Settings) -> Roles:
    """The roles of a command that opens no database unless it asks for one (queues, llm, db history)."""
    return Roles(Container(settings=settings))
