"""What each `firmsift` command does once main.py has parsed its arguments: a table of small
functions of the parsed arguments, each given what it needs by the wiring (wiring/roles.py)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from firmsift.entrypoints.cli.answer_commands import run_answers
from firmsift.entrypoints.cli.batch_commands import run_batch
from firmsift.entrypoints.cli.company_import import read_company_rows
from firmsift.entrypoints.cli.db_arguments import NEEDS_NO_DATABASE
from firmsift.entrypoints.cli.db_commands import run_db
from firmsift.entrypoints.cli.forget_command import run_forget
from firmsift.entrypoints.cli.key_commands import run_keys
from firmsift.entrypoints.cli.process_group import ProcessGroup
from firmsift.entrypoints.cli.queue_commands import dead_letters, declared_queues, read_replies
from firmsift.entrypoints.cli.refresh_command import run_refresh
from firmsift.entrypoints.cli.scale_out import worker_copies
from firmsift.entrypoints.cli.serve_command import serve_copies
from firmsift.entrypoints.command_errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, CommandError
from firmsift.entrypoints.files.csv_files import CsvFileError
from firmsift.entrypoints.http.auth import UnsafeAuthSetting, auth_required
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.config_summary import announce_new_database, log_effective_configuration
from firmsift.entrypoints.wiring.database_file import database_to_create
from firmsift.entrypoints.wiring.llm_credentials import require_llm_credentials
from firmsift.entrypoints.wiring.roles import Roles, started, without_database
from firmsift.services.admin import Admin

Command = Callable[[argparse.Namespace], int]


def dispatch(args: argparse.Namespace) -> int:
    return COMMANDS[args.command](args)


def _eval(args: argparse.Namespace) -> int:
    from firmsift.entrypoints.eval.command import run_eval  # litellm and the report code: only here
    from firmsift.entrypoints.wiring.evaluation import evaluation_backends

    return run_eval(args, evaluation_backends(Settings()))


def _llm(args: argparse.Namespace) -> int:
    from firmsift.entrypoints.cli.llm_check import run_llm_check  # imports litellm: only here

    return run_llm_check(args)


def _queues(args: argparse.Namespace) -> int:
    roles = without_database(Settings())
    try:
        apply = args.queues_command == "ensure"
        return declared_queues(roles.declared_queues(apply=apply), apply=apply)
    finally:
        roles.close()


@contextlib.contextmanager
def _on_the_database(args: argparse.Namespace, settings: Settings, *, migrate: bool) -> Iterator[Roles]:
    """The command's roles on the configured database: a new database file is created only where
    the command may create one (and then announced); closed when the command ends."""
    new_database = database_to_create(settings, args.command)  # refuses to create one by mistake
    roles = started(settings, migrate=migrate)
    if new_database is not None:
        announce_new_database(new_database)
    try:
        yield roles
    finally:
        roles.close()


def _operator(run: Callable[[Admin, argparse.Namespace], int]) -> Command:
    """A command of the operator's (keys, answers, ...): the schema brought up to date first."""
    def command(args: argparse.Namespace) -> int:
        with _on_the_database(args, Settings(), migrate=True) as roles:
            return run(roles.admin(), args)

    return command


def _db(args: argparse.Namespace) -> int:
    """`db upgrade` applies the migrations itself, so it can say which ones it applied."""
    if args.db_command in NEEDS_NO_DATABASE:
        roles = without_database(Settings())
        try:
            return run_db(roles.revisions(), args)
        finally:
            roles.close()
    with _on_the_database(args, Settings(), migrate=False) as roles:
        return run_db(roles.revisions(), args)


def _replies(args: argparse.Namespace) -> int:
    with _on_the_database(args, Settings(), migrate=True) as roles:
        if roles.settings.queue_backend != "db":
            raise CommandError("`firmsift replies` reads the embedded backend's reply queues; with SQS, "
                               "read the reply queue with your own SQS consumer")
        return asyncio.run(read_replies(roles.replies(args.queue), args.queue, args.max, args.wait, args.keep))


@contextlib.contextmanager
def _long_running(args: argparse.Namespace, settings: Settings) -> Iterator[Roles]:
    """`serve`, `api` and `worker`: they wait for a database that is not up yet, then migrate it."""
    with _on_the_database(args, settings, migrate=False) as roles:
        log_effective_configuration(settings, args.command, getattr(args, "host", None))
        roles.wait_for_database()
        yield roles


def _serve(args: argparse.Namespace) -> int:
    """`serve` (the API with a worker beside it) and `api`."""
    settings = Settings()
    try:  # an unsafe setting is refused before any database work (a wait, a new file)
        auth_required(settings.auth, args.host)
    except UnsafeAuthSetting as error:
        print(f"firmsift: {error}", file=sys.stderr)
        return EXIT_USAGE
    with _long_running(args, settings) as roles:
        if args.command == "api" and args.workers > 1:
            return serve_copies(settings, args.host, args.port, args.workers)
        return roles.serve(args.host, args.port, with_worker=args.command == "serve",
                           listen_fd=getattr(args, "listen_fd", None))


def _worker(args: argparse.Namespace) -> int:
    settings = Settings()
    require_llm_credentials(settings)
    with _long_running(args, settings) as roles:
        if args.processes > 1:
            return ProcessGroup(worker_copies(settings, args.processes),
                                grace_seconds=settings.shutdown_grace_seconds).run_until_signalled()
        asyncio.run(_worker_until_signalled(roles))
        return EXIT_OK


def install_stop_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)


async def _worker_until_signalled(roles: Roles) -> None:
    stop = asyncio.Event()
    install_stop_signals(stop)
    await roles.run_worker(stop)


def import_companies(admin: Admin, args: argparse.Namespace) -> int:
    path: Path = args.file
    try:
        rows = read_company_rows(path)
    except CsvFileError as error:
        raise CommandError(str(error)) from None
    written = asyncio.run(admin.known.upsert_known(rows.companies.values()))
    for problem in rows.problems:
        print(problem, file=sys.stderr)
    print(f"imported {written} compan{'y' if written == 1 else 'ies'}; {len(rows.problems)} row(s) rejected")
    return EXIT_FAILURE if rows.problems else EXIT_OK


def _dead_letters(admin: Admin, args: argparse.Namespace) -> int:
    return asyncio.run(dead_letters(admin, args.dlq_command, args.max))


COMMANDS: dict[str, Command] = {
    "serve": _serve,
    "api": _serve,
    "worker": _worker,
    "eval": _eval,
    "llm": _llm,
    "queues": _queues,
    "db": _db,
    "replies": _replies,
    "companies": _operator(import_companies),
    "dlq": _operator(_dead_letters),
    "keys": _operator(run_keys),
    "answers": _operator(run_answers),
    "refresh": _operator(run_refresh),
    "forget": _operator(run_forget),
    "batch": _operator(run_batch),
}
