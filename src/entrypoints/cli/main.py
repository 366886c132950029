"""The `firmsift` command: serve, api, worker, classify, eval, llm check, companies import, answers,
replies, dlq, keys, refresh, forget, batch, db."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from firmsift.domain.errors import FirmsiftError
from firmsift.entrypoints.command_errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, CommandError
from firmsift.entrypoints.cli.answer_commands import add_answers_parser
from firmsift.entrypoints.eval.arguments import add_eval_parser
from firmsift.entrypoints.cli.key_commands import add_keys_parser
from firmsift.entrypoints.cli.batch_commands import add_batch_parser
from firmsift.entrypoints.cli.forget_command import add_forget_parser
from firmsift.entrypoints.cli.refresh_command import add_refresh_parser
from firmsift.entrypoints.cli.llm_check import add_llm_parser
from firmsift.entrypoints.cli.db_arguments import add_db_parser
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.startup_errors import startup_error_line
from firmsift.entrypoints.unknown_variables import unknown_variable_warnings

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8000
MAX_PROCESSES = 64  # `worker --processes` and `api --workers`

DESCRIPTION = """\
firmsift classifies companies by their web domain ("is this a CPG company?").
Settings come from FIRMSIFT_* environment variables or the TOML file named by
FIRMSIFT_CONFIG_FILE; docs/reference/settings.md lists every setting.
Exit codes: 0 success, 1 failure, 2 usage or configuration error, 130 interrupted (Ctrl-C);
`classify` also 3: it finished, but some rows were rejected or failed."""


def _count(text: str) -> int:
    """A process count: a whole number from 1 to 64."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 1 <= count <= MAX_PROCESSES:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_PROCESSES}, got {count}")
    return count


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="firmsift", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for name, help_text in (("serve", "run the API and a worker in one process (the embedded default)"),
                            ("api", "run only the HTTP API (scale it separately from workers)")):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})")
        command.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
        if name == "api":
            command.add_argument("--workers", type=_count, default=1, metavar="N",
                                 help="serve from N processes sharing one listening socket; a process that dies "
                                      "is restarted, SIGTERM stops all (default 1)")
            command.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)  # set by `api --workers N`

    worker = commands.add_parser(
        "worker", help="run a queue consumer that processes jobs",
        description="Consume jobs from the work queue until SIGTERM or SIGINT. With --processes N, N "
                    "consumers run under one parent that forwards SIGTERM/SIGINT to all, restarts one that "
                    "died, and splits FIRMSIFT_SEARCH_REQUESTS_PER_MINUTE evenly between them; they pace their "
                    "LLM calls together through the database (FIRMSIFT_LLM_REQUESTS_PER_MINUTE a ceiling for "
                    "all), each keeps FIRMSIFT_LLM_CONCURRENCY.")
    worker.add_argument("--processes", type=_count, default=1, metavar="N",
                        help="consumer processes to run (default 1)")

    classify = commands.add_parser(
        "classify", help="submit domains to a running API and print or save the results",
        description="Classify a CSV column (--csv) or domains given as arguments with a running firmsift API "
                    "and write every input row back, in input order, with every input column and the answer "
                    "columns appended. A CSV goes as batches (POST /batches; several when the API says a batch "
                    "is too large) followed by one progress line on stderr; with -o FILE a stopped run resumes "
                    "when the same command is run again (state in FILE.part.batch.json: no new batch, the "
                    "download goes on where it stopped). Domains given as arguments, or a CSV for an API "
                    "without /batches, go in jobs of --batch-size. From each cell the first host name is taken; "
                    "blank cells and cells without one are written as REJECTED rows. Rejected rows, failed "
                    "domains and a final count go to stderr. Exit codes: 0 every row answered, 3 finished but "
                    "some rows were rejected or failed, 1 the run could not finish, 2 usage error, 130 interrupted "
                    "(Ctrl-C; run the same command again to resume).")
    classify.add_argument("domains", nargs="*", help="domains to classify")
    classify.add_argument("--csv", type=Path, dest="csv_file", help="read the rows of this CSV file")
    classify.add_argument("--column", help="CSV column holding the domains (default: the first column named "
                                           "domain, website, web site, url, homepage or site, any case; else "
                                           "the one column whose name holds one of those words)")
    classify.add_argument("--encoding", help="the CSV file's encoding (default: from its byte-order mark, else "
                                             "UTF-8; e.g. cp1252 for Excel's Windows exports)")
    classify.add_argument("--delimiter", help="the CSV delimiter (default: sniffed among , ; TAB |)")
    classify.add_argument("--api", default=f"http://{DEFAULT_HOST}:{DEFAULT_PORT}", help="API base URL")
    classify.add_argument("--api-key", help="API key for an API that requires one (default: $FIRMSIFT_API_KEY; "
                                            "prefer the variable, arguments are visible to other users)")
    classify.add_argument("--classifier", default="cpg", help="classifier name (default: cpg)")
    classify.add_argument("--batch-size", type=int, default=10, help="domains per job, without batches (the API's limit; default 10)")
    classify.add_argument("--jobs-in-flight", type=int, default=100,
                          help="jobs submitted and not yet finished at any time, without batches (default 100)")
    classify.add_argument("--format", choices=("csv", "json"), default="csv", help="output format (default csv)")
    classify.add_argument("--output", "-o", type=Path, help="write results to this file instead of stdout")
    classify.add_argument("--timeout", type=float, default=3600,
                          help="give up when no answer arrived for this many seconds (default 3600; "
                               "a CSV's batches go on: run the same command again to resume)")
    classify.add_argument("--estimate", action="store_true",
                          help="print what classifying the domains would cost (the API's dry run of a batch: "
                               "counts by path, LLM tokens, cost, time) and submit nothing")
    classify.add_argument("--poll-interval", type=float, default=1.0, help="seconds between polls (default 1)")
    classify.add_argument("--retry-delay", type=float, default=1.0,
                          help="seconds before retrying a request the API did not answer or refused as busy "
                               "(429, 502-504), doubling after each retry up to 30; 6 attempts in all (default 1)")

    add_eval_parser(commands)
    add_llm_parser(commands)

    companies = commands.add_parser("companies", help="manage the known-companies table")
    companies_commands = companies.add_subparsers(dest="companies_command", required=True, metavar="ACTION")
    importer = companies_commands.add_parser(
        "import", help="import known CPG companies from a CSV file",
        description="Import a CSV with a 'domain' column (and an optional 'name'). Idempotent: rows "
                    "are upserted by domain. Bad rows are reported with line numbers; good rows are kept. "
                    "Exits 1 if any row was rejected.")
    importer.add_argument("file", type=Path, help="CSV file")

    add_answers_parser(commands)

    replies = commands.add_parser(
        "replies", help="read job results published to a reply queue (embedded backend)",
        description="Print the replies waiting on a named reply queue, one JSON document per line.")
    replies.add_argument("--queue", required=True, help="reply queue name (the X-Reply-Queue header value)")
    replies.add_argument("--max", type=int, default=10, help="read at most this many replies (default 10)")
    replies.add_argument("--wait", type=float, default=0.0, help="seconds to wait for a first reply (default 0)")
    replies.add_argument("--keep", action="store_true", help="leave the replies on the queue (peek)")

    queues = commands.add_parser("queues", help="create, update or check the SQS queues declared in the repository")
    queues_commands = queues.add_subparsers(dest="queues_command", required=True, metavar="ACTION")
    queues_commands.add_parser(
        "ensure", help="create missing queues and fix drifted attributes (idempotent)",
        description="Apply the queues declared in FIRMSIFT_QUEUES_FILE (default deploy/queues.toml) through the "
                    "SQS API: the dead-letter queue, the work queue and its redrive policy. Reports each change.")
    queues_commands.add_parser(
        "drift", help="report differences between the declared and the live queues; change nothing",
        description="Exit 1 when any declared queue is missing or differs from its declaration.")

    dlq = commands.add_parser("dlq", help="list or retry jobs whose messages were dead-lettered")
    dlq_commands = dlq.add_subparsers(dest="dlq_command", required=True, metavar="ACTION")
    dlq_list = dlq_commands.add_parser("list", help="show the jobs failed by dead-lettering",
                                       description="Print one JSON line per job that workers marked FAILED because "
                                                   "its message reached the dead-letter queue, oldest first.")
    dlq_list.add_argument("--max", type=int, default=10, help="show at most this many (default 10)")
    redrive = dlq_commands.add_parser(
        "redrive", help="retry dead-lettered jobs",
        description="Send jobs failed by dead-lettering back to the work queue as PENDING; the domains "
                    "already answered are kept and skipped, and the caller gets a new reply.")
    redrive.add_argument("--max", type=int, default=10, help="move at most this many (default 10)")

    add_keys_parser(commands)
    add_refresh_parser(commands)
    add_forget_parser(commands)
    add_batch_parser(commands)

    add_db_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for warning in unknown_variable_warnings(os.environ):
        print(f"firmsift: warning: {warning}", file=sys.stderr)
    try:
        return _run(args)
    except (FirmsiftError, CommandError) as error:
        print(f"firmsift: {error}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:  # Ctrl-C: the shell's convention (128 + SIGINT), and what to do next
        again = "; run the same command again to resume" if args.command == "classify" else ""
        print(f"firmsift: interrupted{again}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:
        line = startup_error_line(error, database=_database_in_use())
        if line is None:
            raise
        print(f"firmsift: {line}", file=sys.stderr)
        return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    """The command's own modules, imported after parsing (so --help stays instant); `classify`,
    an HTTP client, never imports the service's container (SQLAlchemy and every adapter)."""
    if args.command == "classify":
        if args.estimate:
            from firmsift.entrypoints.cli.classify_estimate import run_estimate

            return run_estimate(args)
        from firmsift.entrypoints.cli.classify_command import run_classify

        return run_classify(args)
    from firmsift.entrypoints.cli import commands

    return commands.dispatch(args)


def _database_in_use() -> str | None:
    """The configured database, password hidden, for an error message; None if unreadable."""
    from firmsift.entrypoints.wiring.database_file import describe_database  # SQLAlchemy: only on this path

    try:
        return describe_database(Settings().database_url)
    except Exception:  # noqa: BLE001 - the settings themselves may be what failed
        return None


if __name__ == "__main__":
    sys.exit(main())

