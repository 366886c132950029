"""`firmsift classify --estimate`: what classifying the domains would cost, from the API's dry run
of the batch (nothing is submitted, no provider is called). A list larger than the API takes in
one batch is estimated in parts, as `classify` submits it, and the parts added up."""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from firmsift.domain.estimates import spelled_duration
from firmsift.entrypoints.command_errors import EXIT_OK, EXIT_USAGE, CommandError
from firmsift.entrypoints.files.csv_files import CsvFileError
from firmsift.entrypoints.files.csv_stream import COLUMN_GUESSES, CsvReader, detect_format, find_column
from firmsift.entrypoints.wiring.remote_api import RemoteFirmsift
from firmsift.ports.jobs_api import BatchRefused, ClientError

ARGUMENT_COLUMN = "domain"  # the column domains given as arguments are sent in


def run_estimate(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    if bool(args.domains) == (args.csv_file is not None):
        print("firmsift classify: --estimate needs domains as arguments or --csv FILE (one of them)", file=sys.stderr)
        return EXIT_USAGE
    try:
        column, header, rows = _csv_rows(args)
        api_key = args.api_key or os.environ.get("FIRMSIFT_API_KEY")
        remote = RemoteFirmsift(args.api, api_key)
        parts = estimate_in_parts(lambda body: remote.estimate(classifier=args.classifier, column=column,
                                                               csv_body=body), header, rows)
    except (ClientError, CsvFileError) as error:
        raise CommandError(str(error)) from None
    out.write(estimate_text(added_up(parts)))
    return EXIT_OK


def _csv_rows(args: argparse.Namespace) -> tuple[str, list[str], list[list[str]]]:
    """(column, header, rows): the input read as `classify` reads it (the file's encoding and
    delimiter, or the arguments as a one-column file), so the API counts the rows a real run sends."""
    if args.csv_file is None:
        return ARGUMENT_COLUMN, [ARGUMENT_COLUMN], [[value] for value in args.domains]
    fmt = detect_format(args.csv_file, args.encoding, args.delimiter)
    with CsvReader(args.csv_file, fmt) as reader:
        column = reader.header[find_column(reader.header, args.column, COLUMN_GUESSES)]
        return column, list(reader.header), [cells for _, cells in reader]


def _csv_body(header: list[str], rows: list[list[str]]) -> bytes:
    """The rows as a UTF-8, comma-separated CSV under `header`."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(rows)
    return text.getvalue().encode()


def estimate_in_parts(estimate: Callable[[bytes], dict[str, Any]], header: list[str],
                      rows: list[list[str]]) -> list[dict[str, Any]]:
    """The dry runs of the rows: all at once, or, when the API refuses that many as too large
    (413), of each half, halved again as the API asks (as `classify` submits a large file)."""
    try:
        return [estimate(_csv_body(header, rows))]
    except BatchRefused:
        if len(rows) <= 1:
            raise
    half = len(rows) // 2
    return estimate_in_parts(estimate, header, rows[:half]) + estimate_in_parts(estimate, header, rows[half:])


def added_up(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One estimate of several parts' dry runs: their counts, tokens, cost and time added up (a
    domain in two parts counts in each, as two batches would each hold it)."""
    if len(parts) == 1:
        return parts[0]
    counted = ("total", "accepted", "duplicates", "human_answers", "known_companies", "cached", "cached_precheck",
               "to_precheck", "to_ask")
    whole: dict[str, Any] = {**parts[0], **{name: sum(int(p.get(name) or 0) for p in parts) for name in counted},
                             "rejected": [row for p in parts for row in p["rejected"]]}
    llms = [p["llm"] for p in parts]
    costs = [llm["cost_usd"] for llm in llms]
    seconds = [llm.get("wall_time_seconds") for llm in llms]
    total_seconds = None if None in seconds else sum(seconds)
    whole["llm"] = {
        **llms[0], "tokens_in": sum(llm["tokens_in"] for llm in llms), "tokens_out": sum(llm["tokens_out"] for llm in llms),
        "cost_usd": None if None in costs else sum(costs),
        "cost": next((llm["cost"] for llm in llms if llm["cost"] != "known"), "known"),
        "wall_time_seconds": total_seconds,
        "wall_time": (next(llm["wall_time"] for llm in llms if llm.get("wall_time_seconds") is None)
                      if total_seconds is None else "none to ask" if total_seconds == 0 else
                      f"about {spelled_duration(total_seconds)} for one worker (the {len(parts)} parts the API "
                      "took this list in, added up)"),
    }
    return whole


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
