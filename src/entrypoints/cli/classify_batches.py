"""`firmsift classify --csv` through batches: submit the file's domains as batches (fewer rows a batch
when the API says too large), follow them with one progress line, then read the file again and write
each row with its result line, resuming from a saved state after a stop."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from firmsift.entrypoints.cli.batch_state import BatchChunk, RunState
from firmsift.entrypoints.cli.classify_client import TERMINAL, RowWriter, Tally
from firmsift.entrypoints.cli.classify_report import BatchProgress
from firmsift.entrypoints.cli.classify_rows import Row
from firmsift.entrypoints.cli.server_warnings import ServerWarnings
from firmsift.ports.jobs_api import BatchesApi, BatchRefused, ClientError

ROWS_PER_BATCH = 100_000  # the API's default FIRMSIFT_MAX_DOMAINS_PER_BATCH; halved while it answers 413


def submit_batches(api: BatchesApi, rows: Iterable[Row], state: RunState, save: Callable[[RunState], None],
                   rows_per_batch: int = ROWS_PER_BATCH) -> None:
    """Submit the rows the state has not covered yet, `rows_per_batch` at a time (fewer when the API
    refuses a batch as too large), saving the state after each batch, and before sending one of a new
    size. Each batch's Idempotency-Key comes from the input and the rows it covers, so a batch sent
    again after a stop, with the size saved, is the same batch."""
    source = iter(rows)
    for _ in range(state.covered):
        next(source, None)
    pending: list[str | None] = []
    size, exhausted = state.rows_per_batch or rows_per_batch, False
    while True:
        while not exhausted and len(pending) < size:
            row = next(source, None)
            exhausted = row is None
            if row is not None:
                pending.append(row.domain)
        if not pending:
            return
        taken = pending[:size]
        domains = [domain for domain in taken if domain is not None]
        if domains and state.rows_per_batch != size:
            state.rows_per_batch = size
            save(state)
        try:
            batch_id = api.submit_batch(domains, batch_key(state, len(taken))) if domains else None
        except BatchRefused as refused:
            if size == 1:
                raise ClientError(f"the API refused a batch of one domain: {refused}") from None
            size = max(len(taken) // 2, 1)
            continue
        state.chunks.append(BatchChunk(state.covered, len(taken), batch_id))
        save(state)
        pending = pending[len(taken):]


def batch_key(state: RunState, rows: int) -> str:
    """The Idempotency-Key of the batch covering `rows` rows from the first row not yet covered."""
    return "firmsift-classify-" + hashlib.sha256(f"{state.key_base}:{state.covered}:{rows}".encode()).hexdigest()[:40]


def wait_for_batches(api: BatchesApi, state: RunState, progress: BatchProgress, *, poll_interval: float,
                     stall_timeout: float, warnings: ServerWarnings | None = None) -> None:
    """Poll the batches until none has a domain pending, showing the progress over all of them and
    what the API warns of (no worker can run) as soon as it says so."""
    ids = [chunk.batch_id for chunk in state.chunks if chunk.batch_id is not None]
    last_finished, last_change = -1, time.monotonic()
    warnings = warnings or ServerWarnings()
    while ids:
        documents = [api.batch(batch_id) for batch_id in ids]
        for document in documents:
            warnings.see(document)
        total = sum(int(d.get("total") or 0) for d in documents)
        pending = sum(int(d.get("pending") or 0) for d in documents)
        progress.show(total - pending, total)
        if not pending:
            return
        if total - pending != last_finished:
            last_finished, last_change = total - pending, time.monotonic()
        elif time.monotonic() - last_change > stall_timeout:
            running = ", ".join(d["batch_id"] for d in documents if d.get("pending"))
            raise ClientError(f"gave up: nothing finished for {stall_timeout:.0f}s; batches still running: "
                              f"{running}; run the same command again to go on with them")
        time.sleep(poll_interval)


def write_results(api: BatchesApi, rows: Iterable[Row], state: RunState, writer: RowWriter,
                  on_row: Callable[[Row, Tally], None], checkpoint: Callable[[RunState, bool], None]) -> Tally:
    """Read the rows again and write each one with its batch's result line, from the first row not
    written yet; the download of a batch starts at the result line of that row. `checkpoint` is
    called after each row, and with True when the run stops early (what is written is kept)."""
    try:
        return _write_results(api, iter(rows), state, writer, on_row, checkpoint)
    except (ClientError, KeyboardInterrupt):
        checkpoint(state, True)
        raise


def _write_results(api: BatchesApi, source: Iterator[Row], state: RunState, writer: RowWriter,
                   on_row: Callable[[Row, Tally], None], checkpoint: Callable[[RunState, bool], None]) -> Tally:
    for chunk in state.chunks:
        answered: set[str] = set()  # domains of this batch whose cost is counted (one job result each)
        sent, results = 0, None
        for position in range(chunk.start, chunk.start + chunk.rows):
            row = next(source, None)
            if row is None:
                raise ClientError(f"the input has fewer rows than when its batches were submitted ({position}): "
                                  "was it changed?")
            if position < state.written:
                if row.domain is not None:
                    sent += 1
                    answered.add(row.domain)
                continue
            if row.domain is not None:
                assert chunk.batch_id is not None  # a batch covers every row holding a domain
                if results is None:
                    results = api.batch_results(chunk.batch_id, sent)
                _apply(row, _next_line(results, chunk.batch_id, sent), answered, state.tally)
                sent += 1
            writer.write(row)
            state.tally.count(row)
            state.written += 1
            on_row(row, state.tally)
            checkpoint(state, False)
    return state.tally


def _next_line(results: Iterator[dict[str, Any]], batch_id: str, index: int) -> dict[str, Any]:
    line = next(results, None)
    if line is None:
        raise ClientError(f"the results of batch {batch_id} ended at row {index}")
    return line


def _apply(row: Row, line: dict[str, Any], answered: set[str], tally: Tally) -> None:
    """The row's answer from its result line, as the jobs path would have given it."""
    if line.get("classified_domain") != row.domain:
        raise ClientError(f"line {row.line}: the batch answered {line.get('classified_domain')!r} for "
                          f"{row.domain!r}: was the input changed since it was submitted?")
    status = line.get("status")
    if status == "REJECTED":
        row.reject(f"refused by the API: {line.get('error')}")
        return
    if status not in TERMINAL:  # CANCELLED (the batch was deleted) or still PENDING: not answered
        line = dict(line, status="FAILED", error=line.get("error") or f"the batch ended with this domain {status}")
    row.result, row.job_id = line, line.get("job_id")
    if row.domain not in answered:
        answered.add(str(row.domain))
        tally.spend(line)
