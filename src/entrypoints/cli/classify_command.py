"""`firmsift classify` from its arguments: open the input, stream it through the API, report on stderr."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from firmsift.adapters.firmsift_api_client import jobs_api
from firmsift.entrypoints.cli.classify_client import OrderedClassifier
from firmsift.entrypoints.cli.classify_report import ProgressLine, RowReporter
from firmsift.entrypoints.cli.classify_rows import CsvRowWriter, JsonRowWriter, Row, read_row
from firmsift.entrypoints.cli.command_errors import CommandError
from firmsift.entrypoints.cli.csv_files import CsvFileError
from firmsift.entrypoints.cli.csv_stream import CsvFormat, CsvReader, detect_format, find_column
from firmsift.ports.jobs_api import ClientError

EXIT_OK, EXIT_USAGE, EXIT_UNANSWERED = 0, 2, 3  # failures raise CommandError: exit 1
# Column names tried, in order, when --column is not given.
COLUMN_GUESSES = ("domain", "website", "web site", "url", "homepage", "site")


def run_classify(args: argparse.Namespace) -> int:
    if args.domains and args.csv_file is not None:
        return _usage("pass domains as arguments or with --csv FILE, not both")
    if not args.domains and args.csv_file is None:
        return _usage("no domains given: pass them as arguments or with --csv FILE")
    for option in ("batch_size", "jobs_in_flight"):
        if getattr(args, option) < 1:
            return _usage(f"--{option.replace('_', '-')} must be at least 1")
    if not args.retry_delay > 0:
        return _usage("--retry-delay must be more than 0 seconds")
    part = None
    try:
        with contextlib.ExitStack() as stack:
            fmt, header, rows, where = _open_input(args, stack)
            out, part = _open_output(args.output, fmt, stack)
            writer = (JsonRowWriter(out, header) if args.format == "json"
                      else CsvRowWriter(out, header, fmt.delimiter if fmt else ","))
            progress = ProgressLine()
            api_key = args.api_key or os.environ.get("FIRMSIFT_API_KEY")
            api = stack.enter_context(jobs_api(args.api, args.classifier, api_key=api_key,
                                               retry_delay=args.retry_delay))
            reporter = RowReporter(where, progress)
            classifier = OrderedClassifier(api, writer, batch_size=args.batch_size,
                                           jobs_in_flight=args.jobs_in_flight, poll_interval=args.poll_interval,
                                           stall_timeout=args.timeout, on_row=reporter)
            tally = classifier.run(rows)
            writer.close()
    except (ClientError, CsvFileError) as error:
        left = f"; the rows finished so far are in {part}" if part is not None and part.exists() else ""
        raise CommandError(f"{error}{left}") from None
    if part is not None:
        os.replace(part, args.output)
    progress.finish(tally)
    return EXIT_OK if tally.answered == tally.rows else EXIT_UNANSWERED


def _open_input(args: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[
        CsvFormat | None, list[str], Iterator[Row], str]:
    """(format, header, rows, how a row is named in messages)."""
    if args.csv_file is None:
        rows = (read_row(number, [value], 1, 0) for number, value in enumerate(args.domains, start=1))
        return None, ["domain"], rows, "argument"
    fmt = detect_format(args.csv_file, args.encoding, args.delimiter)
    reader = stack.enter_context(CsvReader(args.csv_file, fmt))
    column = find_column(reader.header, args.column, COLUMN_GUESSES)
    width = len(reader.header)
    print(f"reading {args.csv_file}: column {reader.header[column]!r} of {width}, {fmt.encoding}, "
          f"delimiter {fmt.delimiter!r}", file=sys.stderr)
    return fmt, reader.header, (read_row(line, cells, width, column) for line, cells in reader), "line"


def _open_output(path: Path | None, fmt: CsvFormat | None, stack: contextlib.ExitStack) -> tuple[TextIO, Path | None]:
    """Standard output, or `<output>.part`, renamed to the output once every row is written, so a run
    that stops halfway never leaves a file that looks complete. UTF-8, with a BOM when the input had one
    (Excel needs it to read UTF-8)."""
    encoding = "utf-8-sig" if fmt is not None and fmt.bom else "utf-8"
    if path is None:
        sys.stdout.reconfigure(newline="")  # type: ignore[union-attr]  # the csv module writes its own line ends
        return sys.stdout, None
    part = path.with_name(path.name + ".part")
    try:
        return stack.enter_context(part.open("w", encoding=encoding, newline="")), part
    except OSError as error:
        raise CsvFileError(f"{path}: cannot write: {error.strerror}") from None


def _usage(message: str) -> int:
    print(f"firmsift classify: {message}", file=sys.stderr)
    return EXIT_USAGE
