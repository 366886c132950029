"""What each `firmsift` command does, once main.py has parsed its arguments: the dispatch to each."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from firmsift.entrypoints.cli.answer_commands import run_answers
from firmsift.entrypoints.http.auth import UnsafeAuthSetting, auth_required
from firmsift.entrypoints.cli.command_errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CommandError
from firmsift.entrypoints.cli.company_import import read_company_rows
from firmsift.entrypoints.wiring.config_summary import announce_new_database, log_effective_configuration
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.files.csv_files import CsvFileError
from firmsift.entrypoints.wiring.database_file import database_to_create
from firmsift.entrypoints.wiring.database_wait import DatabaseUnreachable, migrate_when_reachable
from firmsift.entrypoints.cli.db_arguments import NEEDS_NO_DATABASE
from firmsift.entrypoints.cli.db_commands import run_db, run_db_offline
from firmsift.entrypoints.cli.key_commands import run_keys
from firmsift.entrypoints.cli.queue_commands import dead_letters, declared_queues, read_replies
from firmsift.entrypoints.cli.batch_commands import run_batch
from firmsift.entrypoints.cli.forget_command import run_forget
from firmsift.entrypoints.cli.refresh_command import run_refresh
from firmsift.entrypoints.cli.process_group import ProcessGroup
from firmsift.entrypoints.cli.scale_out import worker_copies
from firmsift.entrypoints.cli.serve_command import serve, serve_copies
from firmsift.entrypoints.wiring.llm_credentials import require_llm_credentials
from firmsift.entrypoints.wiring.runtime import run_worker, start_container
from firmsift.entrypoints.settings import Settings
from firmsift.services.admin import Admin
from firmsift.ports.infrastructure_errors import DatabaseReadOnly


def dispatch(args: argparse.Namespace) -> int:
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
    if args.command == "db" and args.db_command in NEEDS_NO_DATABASE:
        return run_db_offline(args)
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
            except (DatabaseUnreachable, DatabaseReadOnly) as error:
                # Read-only: refused before SQLite opens the file; exit 1, as for a database away.
                raise CommandError(str(error)) from None
        if args.command == "api" and args.workers > 1:
            return serve_copies(settings, args.host, args.port, args.workers)
        if args.command in ("serve", "api"):
            return serve(container, args.host, args.port, with_worker=args.command == "serve",
                         listen_fd=getattr(args, "listen_fd", None))
        if args.command == "worker" and args.processes > 1:
            return ProcessGroup(worker_copies(settings, args.processes),
                                grace_seconds=settings.shutdown_grace_seconds).run_until_signalled()
        if args.command == "worker":
            asyncio.run(_worker_until_signalled(container))
            return EXIT_OK
        if args.command == "companies":
            return import_companies(container.admin(), args.file)
        if args.command == "replies":
            if container.settings().queue_backend != "db":
                raise CommandError("`firmsift replies` reads the embedded backend's reply queues; with SQS, "
                                   "read the reply queue with your own SQS consumer")
            return asyncio.run(read_replies(container, args.queue, args.max, args.wait, args.keep))
        if args.command == "dlq":
            return asyncio.run(dead_letters(container.admin(), args.dlq_command, args.max))
        if args.command == "keys":
            return run_keys(container.admin(), args)
        if args.command == "answers":
            return run_answers(container.admin(), args)
        if args.command == "refresh":
            return run_refresh(container.admin(), args)
        if args.command == "forget":
            return run_forget(container.admin(), args)
        if args.command == "batch":
            return run_batch(container.admin(), args)
        if args.command == "db":
            return run_db(container, args)
        raise AssertionError(f"unhandled command {args.command}")
    finally:
        container.shutdown_resources()


def install_stop_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)


async def _worker_until_signalled(container: Container) -> None:
    stop = asyncio.Event()
    install_stop_signals(stop)
    await run_worker(container, stop, probe=True)


def import_companies(admin: Admin, path: Path) -> int:
    try:
        rows = read_company_rows(path)
    except CsvFileError as error:
        raise CommandError(str(error)) from None
    written = asyncio.run(admin.known.upsert_known(rows.companies.values()))
    for problem in rows.problems:
        print(problem, file=sys.stderr)
    print(f"imported {written} compan{'y' if written == 1 else 'ies'}; {len(rows.problems)} row(s) rejected")
    return EXIT_FAILURE if rows.problems else EXIT_OK


