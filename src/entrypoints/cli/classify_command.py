"""`firmsift classify` from its arguments: a CSV file as batches (resumable with -o), domains given as
arguments (or a CSV for an API without batches) streamed as jobs; report on stderr."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from firmsift.entrypoints.cli.batch_state import RunState, load_state, save_state, saved_for_another_run, state_path
from firmsift.entrypoints.cli.classify_batches import submit_batches, wait_for_batches, write_results
from firmsift.entrypoints.cli.classify_client import OrderedClassifier, Tally
from firmsift.entrypoints.cli.classify_report import BatchProgress, ProgressLine, RowReporter
from firmsift.entrypoints.cli.classify_rows import CsvRowWriter, JsonRowWriter, Row, read_row
from firmsift.entrypoints.command_errors import EXIT_OK, EXIT_UNANSWERED, EXIT_USAGE, CommandError
from firmsift.entrypoints.files.csv_files import CsvFileError
from firmsift.entrypoints.files.csv_stream import COLUMN_GUESSES, CsvFormat, CsvReader, detect_format, find_column
from firmsift.entrypoints.wiring.remote_api import RemoteFirmsift
from firmsift.ports.jobs_api import BatchesApi, BatchesMissing, ClientError

# Column names tried, in order, when --column is not given.
# The resume state is saved after this many rows or seconds of writing (and when a download breaks off).
CHECKPOINT_ROWS, CHECKPOINT_SECONDS = 1000, 1.0


class CsvInput:
    """The CSV file as rows: its format, header and column, read again from the start on each `rows()`."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.path: Path = args.csv_file
        self.format = detect_format(self.path, args.encoding, args.delimiter)
        with CsvReader(self.path, self.format) as reader:
            self.header = reader.header
        self.column = find_column(self.header, args.column, COLUMN_GUESSES)
        print(f"reading {self.path}: column {self.header[self.column]!r} of {len(self.header)}, "
              f"{self.format.encoding}, delimiter {self.format.delimiter!r}", file=sys.stderr)

    def rows(self, stack: contextlib.ExitStack) -> Iterator[Row]:
        reader = stack.enter_context(CsvReader(self.path, self.format))
        width = len(self.header)
        return (read_row(line, cells, width, self.column) for line, cells in reader)

    def identities(self, args: argparse.Namespace) -> tuple[str, str]:
        """(the run's identity, its batches' key base): the file's bytes, how they are read and the
        classifier make the batches; the API and output format too make the run (RunState)."""
        digest = hashlib.sha256()
        with self.path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        batches = hashlib.sha256(repr((digest.hexdigest(), self.format, self.column, args.classifier)).encode())
        run = hashlib.sha256(repr((batches.hexdigest(), args.api, args.format)).encode())
        return run.hexdigest(), batches.hexdigest()


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
    part = None if args.output is None else args.output.with_name(args.output.name + ".part")
    progress = ProgressLine()
    try:
        with contextlib.ExitStack() as stack:
            api_key = args.api_key or os.environ.get("FIRMSIFT_API_KEY")
            api = stack.enter_context(RemoteFirmsift(args.api, api_key).batches(
                args.classifier, retry_delay=args.retry_delay,
                on_unreachable=lambda message: print(f"firmsift: {message}", file=sys.stderr, flush=True)))
            if args.csv_file is None:
                tally = _run_jobs(args, api, None, ["domain"], _argument_rows(args), part, "argument", progress)
            else:
                source = CsvInput(args)
                try:
                    tally = _run_batches(args, api, source, part, progress)
                except BatchesMissing:
                    print(f"{args.api} has no /batches (an older firmsift): classifying in jobs of "
                          f"{args.batch_size} instead, without resume", file=sys.stderr)
                    tally = _run_jobs(args, api, source.format, source.header, source.rows(stack), part, "line",
                                      progress)
    except (ClientError, CsvFileError) as error:
        left = f"; the rows finished so far are in {part}" if part is not None and part.exists() else ""
        raise CommandError(f"{error}{left}") from None
    if part is not None:
        os.replace(part, args.output)
        state_path(part).unlink(missing_ok=True)
    progress.finish(tally)
    return EXIT_OK if tally.answered == tally.rows else EXIT_UNANSWERED


def _run_batches(args: argparse.Namespace, api: BatchesApi, source: CsvInput, part: Path | None,
                 progress: ProgressLine) -> Tally:
    identity, key_base = source.identities(args)
    saved = None if part is None else load_state(state_path(part), identity)
    if saved is None and part is not None and saved_for_another_run(state_path(part), identity):
        print(f"firmsift: {state_path(part)} is a stopped run of another input or request (the file changed, or "
              "--column, --classifier, --api or --format): starting a new run, not resuming that one",
              file=sys.stderr)
    state = saved or RunState(identity, key_base)
    save: Callable[[RunState], None] = (lambda s: None) if part is None else (lambda s: save_state(state_path(part), s))
    if saved is not None:
        print(f"resuming: {len(saved.chunks)} batch(es) already submitted, {saved.written} rows already written "
              f"(state in {state_path(part)})", file=sys.stderr)  # type: ignore[arg-type]
    with contextlib.ExitStack() as stack:
        submit_batches(api, source.rows(stack), state, save)
    wait_for_batches(api, state, BatchProgress(), poll_interval=args.poll_interval, stall_timeout=args.timeout)
    with contextlib.ExitStack() as stack:
        out = _open_output(part, source.format, stack, state)
        writer = _writer(args, out, source.header, source.format, resumed=state.written_bytes > 0)
        last_save = [time.monotonic()]

        def checkpoint(current: RunState, now: bool = False) -> None:
            if part is not None and (now or current.written % CHECKPOINT_ROWS == 0
                                     or time.monotonic() - last_save[0] >= CHECKPOINT_SECONDS):
                current.written_bytes = _position(out)
                save(current)
                last_save[0] = time.monotonic()

        tally = write_results(api, source.rows(stack), state, writer, RowReporter("line", progress), checkpoint)
        writer.close()
    return tally


def _run_jobs(args: argparse.Namespace, api: BatchesApi, fmt: CsvFormat | None, header: list[str],
              rows: Iterator[Row], part: Path | None, where: str, progress: ProgressLine) -> Tally:
    with contextlib.ExitStack() as stack:
        out = _open_output(part, fmt, stack, None)
        writer = _writer(args, out, header, fmt, resumed=False)
        classifier = OrderedClassifier(api, writer, batch_size=args.batch_size, jobs_in_flight=args.jobs_in_flight,
                                       poll_interval=args.poll_interval, stall_timeout=args.timeout,
                                       on_row=RowReporter(where, progress))
        tally = classifier.run(rows)
        writer.close()
    return tally


def _argument_rows(args: argparse.Namespace) -> Iterator[Row]:
    """Domains given as arguments: the cells of a one-column table named `domain`."""
    return (read_row(number, [value], 1, 0) for number, value in enumerate(args.domains, start=1))


def _writer(args: argparse.Namespace, out: TextIO, header: list[str], fmt: CsvFormat | None, *,
            resumed: bool) -> CsvRowWriter | JsonRowWriter:
    if args.format == "json":
        return JsonRowWriter(out, header, resumed=resumed)
    return CsvRowWriter(out, header, fmt.delimiter if fmt else ",", resumed=resumed)


def _open_output(part: Path | None, fmt: CsvFormat | None, stack: contextlib.ExitStack,
                 state: RunState | None) -> TextIO:
    """Standard output, or `<output>.part`, renamed to the output once every row is written, so a run
    that stops halfway never leaves a file that looks complete; when resuming, the part file cut back
    to what the state says is complete. UTF-8, with a BOM when the input had one (Excel needs it)."""
    encoding = "utf-8-sig" if fmt is not None and fmt.bom else "utf-8"
    if part is None:
        sys.stdout.reconfigure(newline="")  # type: ignore[union-attr]  # the csv module writes its own line ends
        return sys.stdout
    try:
        keep = state.written_bytes if state is not None and part.exists() else 0
        if state is not None and part.exists() and part.stat().st_size < keep:
            keep = 0  # shorter than the state says: not the file it describes; write it again
        if keep == 0 and state is not None:
            state.written, state.written_bytes, state.tally = 0, 0, Tally()
        binary = stack.enter_context(part.open("r+b" if keep else "wb"))
        binary.truncate(keep)
        binary.seek(keep)
        # At a position past 0 the text layer writes no second BOM.
        return stack.enter_context(io.TextIOWrapper(binary, encoding=encoding, newline=""))
    except OSError as error:
        raise CsvFileError(f"{part.with_suffix('')}: cannot write: {error.strerror}") from None


def _position(out: TextIO) -> int:
    """Bytes written so far (0 on standard output, which is never resumed)."""
    if not isinstance(out, io.TextIOWrapper) or out is sys.stdout:
        return 0
    out.flush()
    return out.buffer.tell()


def _usage(message: str) -> int:
    print(f"firmsift classify: {message}", file=sys.stderr)
    return EXIT_USAGE
