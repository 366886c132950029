"""`firmsift classify --estimate`: what classifying the domains would cost, from the API's dry run
of the batch (nothing is submitted, no provider is called)."""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from typing import Any, TextIO

from firmsift.adapters.firmsift_estimate_client import estimate_batch
from firmsift.entrypoints.cli.command_errors import EXIT_OK, EXIT_USAGE, CommandError
from firmsift.entrypoints.cli.csv_files import CsvFileError
from firmsift.entrypoints.cli.csv_stream import COLUMN_GUESSES, CsvReader, detect_format, find_column
from firmsift.ports.jobs_api import ClientError

ARGUMENT_COLUMN = "domain"  # the column domains given as arguments are sent in


def run_estimate(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    if bool(args.domains) == (args.csv_file is not None):
        print("firmsift classify: --estimate needs domains as arguments or --csv FILE (one of them)", file=sys.stderr)
        return EXIT_USAGE
    try:
        column, body = _csv_body(args)
        estimate = estimate_batch(args.api, classifier=args.classifier, column=column, csv_body=body,
                                  api_key=args.api_key or os.environ.get("FIRMSIFT_API_KEY"))
    except (ClientError, CsvFileError) as error:
        raise CommandError(str(error)) from None
    out.write(estimate_text(estimate))
    return EXIT_OK


def _csv_body(args: argparse.Namespace) -> tuple[str, bytes]:
    """(column, body): the input as a UTF-8, comma-separated CSV, read as `classify` reads it (the
    file's encoding and delimiter, or the arguments as a one-column file), so the API counts the
    rows a real run sends."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n")
    if args.csv_file is None:
        writer.writerow([ARGUMENT_COLUMN])
        writer.writerows([value] for value in args.domains)
        return ARGUMENT_COLUMN, text.getvalue().encode()
    fmt = detect_format(args.csv_file, args.encoding, args.delimiter)
    with CsvReader(args.csv_file, fmt) as reader:
        column = reader.header[find_column(reader.header, args.column, COLUMN_GUESSES)]
        writer.writerow(reader.header)
        writer.writerows(cells for _, cells in reader)
    return column, text.getvalue().encode()


def _rate(requests_per_minute: float | None) -> str:
    return "" if requests_per_minute is None else f", {requests_per_minute:g} LLM requests a minute"


def estimate_text(estimate: dict[str, Any]) -> str:
    """The dry run as lines for a person: counts by path, then the LLM's tokens, cost and time."""
    llm = estimate["llm"]
    cost = f"{llm['cost_usd']:.4f} USD" if llm["cost_usd"] is not None else llm["cost"]
    lines = [
        f"rows {estimate['total']}: {estimate['accepted']} domains, {estimate['duplicates']} duplicates, "
        f"{len(estimate['rejected'])} rejected",
        f"human answers {estimate.get('human_answers', 0)}, "  # an API from before human answers omits them
        f"known companies {estimate['known_companies']}, cached {estimate['cached']}, "
        f"cached pre-check outcomes {estimate['cached_precheck']}",
        f"to pre-check {estimate['to_precheck']}, to ask the LLM at most {estimate['to_ask']} ({llm['model']})",
        f"tokens {llm['tokens_in']} in, {llm['tokens_out']} out ({llm['tokens_basis']})",
        f"cost {cost}",
        f"time {llm['wall_time']} (LLM concurrency {llm['concurrency']}, {llm['domains_at_once']} domains at once"
        f"{_rate(llm['requests_per_minute'])} per worker)",
    ]
    return "\n".join(lines) + "\n"
