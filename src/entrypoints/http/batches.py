"""The batch routes: POST /batches (a JSON list or a CSV upload), GET its progress and results,
DELETE to cancel what has not started. Each API key sees only its own batches."""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from functools import partial
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from firmsift.domain.batch_documents import accepted_batch_document, progress_document
from firmsift.domain.batch_results import answer_names, csv_header, csv_lines, json_lines
from firmsift.domain.batches import Batch, BatchStatus, InputRow
from firmsift.domain.cell_host import domain_from_cell
from firmsift.domain.clock import utc_now
from firmsift.domain.economy import BatchMode
from firmsift.domain.errors import InvalidRequest, Rejection
from firmsift.domain.job_document import warned
from firmsift.domain.keys import Caller
from firmsift.domain.model import Classifier
from firmsift.domain.normalize import normalize_domain
from firmsift.entrypoints.http.auth import Gate
from firmsift.entrypoints.http.batch_body import CSV, CsvUpload, content_kind, spool_body
from firmsift.entrypoints.http.batch_json import read_json_batch
from firmsift.entrypoints.http.body_passes import BodyPasses
from firmsift.entrypoints.http.batch_submit import BatchSubmitter
from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.http.query_numbers import LARGEST_ROW_INDEX, whole_number
from firmsift.entrypoints.settings import Settings
from firmsift.ports.batches import BatchIntake, BatchStore
from firmsift.ports.queue import WorkQueue
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batch_intake import BatchSubmission, SubmitBatch, check_batch_request
from firmsift.services.batch_retry import retry_failed_rows
from firmsift.services.batches import BatchReplies, cancel_batch, find_batch, result_pages
from firmsift.services.budgets import Budgets

DEFAULT_CLASSIFIER = "cpg"
FORMATS = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}


def batch_routes(*, settings: Settings, catalog: Mapping[str, Classifier], gate: Gate, intake: BatchIntake,
                 batches: BatchStore, replies: BatchReplies, own_queues: Collection[str],
                 deadline: Callable[[], AbstractAsyncContextManager[None]], budgets: Budgets,
                 estimator: BatchEstimator, queue: WorkQueue, passes: BodyPasses,
                 warning: str | None = None) -> list[Route]:
    """The routes, on the app's gate (keys, rate limits), backend deadline and spend limits;
    `passes` reads the bodies;
    `estimator` answers POST /batches?dry_run=true; `warning` (no worker can run) is added to the
    202 and to a running batch's progress."""

    async def caller_of(request: Request) -> Caller:
        return await gate.caller(request.headers, request.client.host if request.client else "")

    submitter = BatchSubmitter(settings, catalog, intake, batches, replies, budgets, deadline)

    async def accept(command: SubmitBatch, dry_run: bool) -> BatchSubmission | dict[str, Any]:
        if dry_run:
            return await estimator.estimate(command)
        return await submitter.submit(command)

    async def submit(request: Request) -> JSONResponse:
        caller = await caller_of(request)  # before the body: strangers cost no reading
        dry_run = _dry_run(request.query_params.get("dry_run"))
        if not dry_run:  # a dry run spends nothing: it is answered over a spent limit too
            await submitter.check_budget(caller)  # 429 budget_exhausted, before the body too
        kind = content_kind(request)
        reply_queue = request.headers.get("x-reply-queue")
        if reply_queue is not None and reply_queue.strip() in own_queues:
            raise InvalidRequest("invalid X-Reply-Queue", (Rejection(reply_queue, "is one of firmsift's own queues"),))
        column = request.query_params.get("column")
        classifier: object = request.query_params.get("classifier", DEFAULT_CLASSIFIER)
        mode: object = request.query_params.get("mode", BatchMode.STANDARD.value)  # a JSON body's "mode" comes first
        if (kind == CSV and column is None) or (column is not None and not column.strip()):
            raise BodyRejected(400, "missing_column", "a CSV upload needs ?column=NAME: the column holding the domains")
        key = request.headers.get("idempotency-key")

        def command(classifier: object, rows: Iterable[InputRow], read_domain: Callable[[object], str],
                    request_hash: str = "", columns: tuple[str, ...] | None = None) -> SubmitBatch:
            return SubmitBatch(classifier, rows, read_domain, request_hash, columns, reply_queue, caller, key, mode)

        if kind == CSV:
            check_batch_request(command(classifier, (), cell_domain), catalog)  # before the body is read
        with tempfile.TemporaryDirectory(prefix="firmsift-batch-") as folder:
            body = await spool_body(request, Path(folder), settings.max_batch_body_bytes)
            # The mode only when not the default, so a standard batch's identity is as it always was.
            economy = "" if mode == BatchMode.STANDARD.value else f"\n{mode}"
            identity = hashlib.sha256(f"{kind}\n{column}\n{classifier}\n{reply_queue}\n{body.sha256}{economy}".encode())
            if kind == CSV:
                assert column is not None
                upload = await passes.run(partial(CsvUpload, body, column, max_columns=settings.max_csv_columns,
                                                  max_row_chars=settings.max_row_chars))
                try:
                    submission = await accept(command(classifier, upload.rows(), cell_domain,
                                                      identity.hexdigest(), upload.header), dry_run)
                finally:
                    upload.close()
            else:
                batch = await passes.run(partial(read_json_batch, body.path, settings.max_domains_per_batch,
                                                 settings.max_row_chars))
                mode = mode if batch.mode is None else batch.mode
                submission = await accept(command(batch.classifier, batch.rows(), normalize_domain,
                                                  identity.hexdigest()), dry_run)
        if isinstance(submission, dict):
            return JSONResponse(submission)  # the dry run: nothing recorded, nothing to reply
        headers = {"Location": f"/batches/{submission.batch.id}"}
        if submission.replayed:
            headers["Idempotent-Replayed"] = "true"
        return JSONResponse(warned(accepted_batch_document(submission.batch, submission.rejected), warning),
                            status_code=202, headers=headers)

    async def owned(request: Request) -> Batch:
        caller = await caller_of(request)
        async with deadline():
            return await find_batch(request.path_params["batch_id"], caller.owner, batches)

    async def progress(request: Request) -> JSONResponse:
        batch = await owned(request)
        async with deadline():
            counts = await batches.counts(batch.id)
        document = progress_document(batch, counts, utc_now())
        return JSONResponse(warned(document, warning if document["status"] == BatchStatus.RUNNING.value else None))

    async def results(request: Request) -> Response:
        batch = await owned(request)
        wanted = request.query_params.get("format") or ("csv" if CSV in request.headers.get("accept", "") else "jsonl")
        if wanted not in FORMATS:
            raise BodyRejected(400, "bad_format", f"format must be one of {', '.join(FORMATS)}, not {wanted!r}")
        # Checked before the answer starts: past it, a failure can only cut the stream short.
        start = whole_number(request.query_params, "start", low=0, high=LARGEST_ROW_INDEX, default=0)
        return StreamingResponse(result_lines(batch, batches, wanted, start), media_type=FORMATS[wanted])

    async def cancel(request: Request) -> JSONResponse:
        batch = await owned(request)
        async with deadline():
            cancelled = await cancel_batch(batch, batches, replies)
            current = await batches.get_batch(batch.id)
            counts = await batches.counts(batch.id)
        assert current is not None
        return JSONResponse({**progress_document(current, counts, utc_now()), "cancelled_jobs": cancelled})

    async def retry(request: Request) -> JSONResponse:
        batch = await owned(request)
        async with deadline():
            retried = await retry_failed_rows(batch, batches, queue)
            counts = await batches.counts(batch.id)
        document = progress_document(batch, counts, utc_now())
        return JSONResponse({**warned(document, warning if retried else None), "retried_jobs": retried})

    async def progress_or_cancel(request: Request) -> JSONResponse:
        return await (cancel(request) if request.method == "DELETE" else progress(request))

    return [
        Route("/batches", submit, methods=["POST"]),
        # One route for both methods, so a 405 there names both in its Allow header.
        Route("/batches/{batch_id}", progress_or_cancel, methods=["GET", "DELETE"]),
        Route("/batches/{batch_id}/results", results, methods=["GET"]),
        Route("/batches/{batch_id}/retry", retry, methods=["POST"]),
    ]


async def result_lines(batch: Batch, batches: BatchStore, wanted: str, start: int = 0) -> AsyncIterator[str]:
    """The batch's results from row `start` as CSV (with its header) or JSON Lines (`wanted`: a key of FORMATS)."""
    if wanted == "csv":
        yield csv_header(batch, answer_names())
    write = csv_lines if wanted == "csv" else json_lines
    async for page in result_pages(batch, batches, start=start):
        yield await asyncio.to_thread(write, batch, page)  # a page of wide rows takes a while: off the event loop


def _dry_run(value: str | None) -> bool:
    if value is None or value.lower() in ("false", "0"):
        return False
    if value.lower() in ("true", "1", ""):
        return True
    raise BodyRejected(400, "bad_dry_run", f"dry_run must be true or false, not {value!r}")


def cell_domain(value: object) -> str:
    """A CSV cell's domain, by the CLI's rule: the first host name in the cell, normalized."""
    return domain_from_cell(value if isinstance(value, str) else "").domain
