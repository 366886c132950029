"""What each `firmsift` command does, once its arguments are parsed (see cli.py for the parser)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from pathlib import Path

from firmsift.entrypoints.http.auth import UnsafeAuthSetting, auth_required
from firmsift.entrypoints.cli.command_errors import CommandError
from firmsift.entrypoints.cli.company_import import read_company_rows
from firmsift.domain.errors import QueueUnavailable
from firmsift.entrypoints.config_summary import announce_new_database, log_effective_configuration
from firmsift.entrypoints.container import Container
from firmsift.entrypoints.cli.csv_files import CsvFileError
from firmsift.entrypoints.database_file import database_to_create
from firmsift.entrypoints.database_wait import DatabaseUnreachable, migrate_when_reachable
from firmsift.entrypoints.cli.key_commands import run_keys
from firmsift.entrypoints.llm_credentials import (
    NO_CREDENTIALS,
    READINESS_CHECK,
    llm_credentials_problem,
    require_llm_credentials,
)
from firmsift.entrypoints.runtime import run_worker, running_worker, start_container
from firmsift.entrypoints.settings import Settings
from firmsift.services.dead_letters import DEAD_LETTER_ERROR, redrive_dead_lettered

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
REQUEST_LINE_ROOM = 8192  # the method, URL and version before the headers (as nginx's default buffer)
FD_RESERVE = 64  # file descriptors kept free of client connections: listener, SQLite files, logs, the worker's clients
# Connections asyncio accepts in one go before the cap sees any of them (uvicorn's default is 2048).
# Refused connections hold their descriptor for a few loop turns, during which more bursts may
# arrive: ACCEPT_BURSTS of them are kept free, so a flood is refused with 503, not met with EMFILE
# (on which asyncio logs and retries once per connection of the burst).
ACCEPT_BACKLOG = 128
ACCEPT_BURSTS = 4


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "classify":
        return classify(args)
    if args.command == "eval":
        from firmsift.entrypoints.eval.command import run_eval  # litellm and the report code: only here

        return run_eval(args)
    if args.command == "llm":
        from firmsift.entrypoints.cli.llm_check import run_llm_check  # imports litellm: only here

        return run_llm_check(args)
    if args.command == "queues":
        queues = Container(settings=Settings())
        try:
            return declared_queues(queues, apply=args.queues_command == "ensure")
        finally:
            queues.shutdown_resources()
    settings = Settings()
    if args.command == "worker":
        require_llm_credentials(settings)
    if args.command in ("serve", "api"):
        try:  # an unsafe setting is refused before any database work (a wait, a new file)
            auth_required(settings.auth, args.host)
        except UnsafeAuthSetting as error:
            print(f"firmsift: {error}", file=sys.stderr)
            return EXIT_USAGE
    new_database = database_to_create(settings, args.command)  # refuses to create one by mistake
    # `db upgrade` applies the migrations itself, so it can say which ones it applied; the
    # long-running processes wait for a database that is not up yet, then migrate.
    long_running = args.command in ("serve", "api", "worker")
    container = start_container(settings, migrate=args.command != "db" and not long_running)
    if new_database is not None:
        announce_new_database(new_database)
    if long_running:
        log_effective_configuration(settings, args.command, getattr(args, "host", None))
    try:
        if long_running:
            try:
                migrate_when_reachable(container)
            except DatabaseUnreachable as error:
                raise CommandError(str(error)) from None
        if args.command in ("serve", "api"):
            return serve(container, args.host, args.port, with_worker=args.command == "serve")
        if args.command == "worker":
            asyncio.run(_worker_until_signalled(container))
            return EXIT_OK
        if args.command == "companies":
            return import_companies(container, args.file)
        if args.command == "replies":
            if container.settings().queue_backend != "db":
                raise CommandError("`firmsift replies` reads the embedded backend's reply queues; with SQS, "
                                   "read the reply queue with your own SQS consumer")
            return asyncio.run(read_replies(container, args.queue, args.max, args.wait, args.keep))
        if args.command == "dlq":
            return asyncio.run(dead_letters(container, args.dlq_command, args.max))
        if args.command == "keys":
            return run_keys(container, args)
        if args.command == "db":
            applied = container.migrate()
            print(f"applied {len(applied)} migration(s)" + "".join(f"\n  {m.version:03d} {m.name}" for m in applied))
            return EXIT_OK
        raise AssertionError(f"unhandled command {args.command}")
    finally:
        container.shutdown_resources()


def serve(container: Container, host: str, port: int, *, with_worker: bool) -> int:
    import uvicorn

    from firmsift.entrypoints.http.protocol import ConnectionLimits, connection_cap, guarded_protocol

    llm_problem = llm_credentials_problem(container.settings()) if with_worker else None
    if llm_problem is not None:
        # The API still accepts jobs (they wait in the queue), but no worker runs and /readyz says why.
        logging.getLogger(__name__).error(f"no worker started, jobs wait in the queue: {llm_problem}")
        with_worker = False
    if with_worker:
        container.worker_llm()  # import litellm (seconds) now, not on the loop serving requests
    background = (lambda: running_worker(container)) if with_worker else None
    app = container.api(background=background, host=host,  # auth was checked in dispatch
                        not_ready={READINESS_CHECK: NO_CREDENTIALS} if llm_problem else None)
    settings = container.settings()
    # uvicorn handles SIGTERM/SIGINT: stops accepting, drains requests, then runs the lifespan's exit.
    # Its bound on a request head still arriving (request line + headers) keeps a slow sender from
    # filling memory; the app itself answers 431 for headers over max_header_bytes. The protocol
    # class adds what uvicorn lacks: deadlines for a request's head and body, and a connection cap.
    limits = ConnectionLimits(
        header_timeout=settings.header_timeout, body_timeout=settings.body_timeout,
        max_connections=connection_cap(settings.max_connections,
                                       reserved=FD_RESERVE + ACCEPT_BURSTS * ACCEPT_BACKLOG + settings.db_pool_size
                                       + settings.db_max_overflow))
    uvicorn.run(app, host=host, port=port, log_config=None, http=guarded_protocol(limits), backlog=ACCEPT_BACKLOG,
                timeout_keep_alive=settings.keep_alive_timeout,  # type: ignore[arg-type]
                timeout_graceful_shutdown=settings.shutdown_grace_seconds,  # type: ignore[arg-type]
                h11_max_incomplete_event_size=settings.max_header_bytes + REQUEST_LINE_ROOM)
    return EXIT_OK


def install_stop_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)


async def _worker_until_signalled(container: Container) -> None:
    stop = asyncio.Event()
    install_stop_signals(stop)
    await run_worker(container, stop, probe=True)


def import_companies(container: Container, path: Path) -> int:
    try:
        rows = read_company_rows(path)
    except CsvFileError as error:
        raise CommandError(str(error)) from None
    written = asyncio.run(container.store().upsert_known(rows.companies.values()))
    for problem in rows.problems:
        print(problem, file=sys.stderr)
    print(f"imported {written} compan{'y' if written == 1 else 'ies'}; {len(rows.problems)} row(s) rejected")
    return EXIT_FAILURE if rows.problems else EXIT_OK


async def read_replies(container: Container, queue_name: str, limit: int, wait: float, keep: bool) -> int:
    queue = container.reply_reader(queue_name)
    messages = await queue.read_messages(limit=limit, wait_seconds=wait, consume=not keep)
    for message in messages:
        print(message.body)
    print(f"{len(messages)} repl{'y' if len(messages) == 1 else 'ies'} read from {queue_name}", file=sys.stderr)
    return EXIT_OK


def declared_queues(container: Container, *, apply: bool) -> int:
    from firmsift.adapters.sqs.queue_spec import QueueSpecError

    try:
        report = container.declared_queues(apply=apply)
    except (QueueSpecError, OSError, QueueUnavailable) as error:  # QueueUnavailable: SQS unreachable or refusing
        raise CommandError(str(error)) from None
    for line in report:
        print(line)
    in_sync = all(line.endswith("in sync") for line in report)
    return EXIT_OK if apply or in_sync else EXIT_FAILURE


async def dead_letters(container: Container, action: str, limit: int) -> int:
    """Workers drain the dead-letter queue into FAILED jobs; these commands work from that record."""
    if limit < 1:
        raise CommandError("--max must be at least 1")
    store = container.store()
    if action == "list":
        failed = await store.list_failed_jobs(error=DEAD_LETTER_ERROR, limit=limit)
        for job in failed:
            print(json.dumps({"job_id": job.id, "classifier": job.classifier, "created_at": job.created_at.isoformat(),
                              "domains": len(job.domains),
                              "unfinished": sum(r.status.value == "PENDING" for r in job.results)}))
        print(f"{len(failed)} dead-lettered job(s) shown", file=sys.stderr)
        return EXIT_OK
    retried = await redrive_dead_lettered(store, container.work_queue(), limit=limit)
    print(f"sent {len(retried)} dead-lettered job(s) back to the work queue")
    return EXIT_OK


def classify(args: argparse.Namespace) -> int:
    # Imported here: the HTTP client is the CLI's, and `firmsift api` must not carry it (memory).
    from firmsift.entrypoints.cli.classify_command import run_classify

    return run_classify(args)
