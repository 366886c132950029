"""Submitting a batch from the web app: the form, then its script sends the pasted list or the
CSV file as the request body (to /new/check for the column, a preview and the dry-run estimate,
then to /new/submit). Both go through what POST /batches uses (the dry-run estimator,
BatchSubmitter) and read the body by its rules (batch_body)."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from firmsift.domain.batches import InputRow
from firmsift.domain.errors import InvalidRequest, Rejection
from firmsift.domain.model import Classifier
from firmsift.domain.normalize import DomainRejected, normalize_domain
from firmsift.entrypoints.files.csv_files import CsvFileError
from firmsift.entrypoints.files.csv_stream import COLUMN_GUESSES, CsvReader, detect_format, find_column
from firmsift.entrypoints.http.batch_body import CsvUpload, SpooledBody, json_input_rows, spool_body
from firmsift.entrypoints.http.batch_submit import BatchSubmitter
from firmsift.entrypoints.http.batches import DEFAULT_CLASSIFIER, cell_domain
from firmsift.entrypoints.http.body_passes import BodyPasses
from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.web.site import Site, Visitor
from firmsift.ports.batches import BatchIntake, BatchStore
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batch_intake import SubmitBatch
from firmsift.services.batches import BatchReplies
from firmsift.services.budgets import Budgets

PREVIEW_ROWS = 10
SHOWN_REJECTED = 20
KINDS = ("csv", "list")


def submit_routes(site: Site, *, settings: Settings, catalog: Mapping[str, Classifier], intake: BatchIntake,
                  batches: BatchStore, replies: BatchReplies, budgets: Budgets, estimator: BatchEstimator,
                  deadline: Callable[[], AbstractAsyncContextManager[None]], passes: BodyPasses) -> list[Route]:
    submitter = BatchSubmitter(settings, catalog, intake, batches, replies, budgets, deadline)

    async def new_page(request: Request, visitor: Visitor) -> Response:
        return await site.render(request, visitor.session, "new.html", title="New batch", classifiers=sorted(catalog),
                                 default_classifier=DEFAULT_CLASSIFIER, max_bytes=settings.max_batch_body_bytes)

    async def check(request: Request, visitor: Visitor) -> Response:
        """The column used (and the CSV's columns), the first rows as they will be read, and the dry run."""
        with tempfile.TemporaryDirectory(prefix="firmsift-web-") as folder:
            body = await spool_body(request, Path(folder), settings.max_batch_body_bytes)
            form = await passes.run(partial(FormUpload, body, request.query_params, settings))
            try:
                preview = [_previewed(row, form.read_domain) for row in islice(form.rows(), PREVIEW_ROWS)]
            finally:
                form.close()
            form = await passes.run(partial(FormUpload, body, request.query_params, settings))  # read again, whole, for the estimate
            try:
                estimate = await estimator.estimate(form.command(visitor, body, request.query_params))
            finally:
                form.close()
        rejected = estimate.pop("rejected")
        return JSONResponse({"columns": form.columns, "column": form.column, "preview": preview,
                             "rejected": rejected[:SHOWN_REJECTED], "estimate": estimate})

    async def submit(request: Request, visitor: Visitor) -> Response:
        await submitter.check_budget(visitor.caller)
        with tempfile.TemporaryDirectory(prefix="firmsift-web-") as folder:
            body = await spool_body(request, Path(folder), settings.max_batch_body_bytes)
            form = await passes.run(partial(FormUpload, body, request.query_params, settings))
            try:
                submission = await submitter.submit(form.command(visitor, body, request.query_params))
            finally:
                form.close()
        return JSONResponse({"batch_id": submission.batch.id, "url": f"/batch/{submission.batch.id}"}, status_code=201)

    return [
        Route("/new", site.page(new_page), methods=["GET"]),
        Route("/new/check", site.page(check, csrf=True), methods=["POST"]),
        Route("/new/submit", site.page(submit, csrf=True), methods=["POST"]),
    ]


class FormUpload:
    """The body as the form sent it: a CSV file (?kind=csv, its domain column ?column=, else guessed
    as the CLI guesses) or a pasted list, one domain a line (?kind=list)."""

    def __init__(self, body: SpooledBody, query: Mapping[str, str], settings: Settings) -> None:
        kind = query.get("kind", "")
        if kind not in KINDS:
            raise BodyRejected(400, "bad_kind", f"kind must be csv or list, not {kind!r}")
        self.csv: CsvUpload | None = None
        self.columns: list[str] = []
        self.column: str | None = None
        self._path = body.path
        self._max_line = settings.max_row_chars
        if kind == "csv":
            self.column = query.get("column") or _guessed_column(body)
            self.csv = CsvUpload(body, self.column, max_columns=settings.max_csv_columns,
                                 max_row_chars=settings.max_row_chars)
            self.columns = list(self.csv.header)
        elif next(self._pasted(), None) is None:
            raise InvalidRequest("no domains", (Rejection("", "paste one domain a line"),))

    @property
    def read_domain(self) -> Callable[[object], str]:
        return cell_domain if self.csv is not None else normalize_domain

    def rows(self) -> Iterator[InputRow]:
        return self.csv.rows() if self.csv is not None else json_input_rows(self._pasted())

    def _pasted(self) -> Iterator[str]:
        """The pasted list's lines that are not blank, trimmed, read one at a time; 413 for a line
        longer than FIRMSIFT_MAX_ROW_CHARS (refused before it is held)."""
        with self._path.open(encoding="utf-8", errors="replace") as text:
            number = 0
            while line := text.readline(self._max_line + 1):
                number += 1
                if len(line.rstrip("\r\n")) > self._max_line:
                    raise BodyRejected(413, "row_too_large", f"line {number} is longer than {self._max_line} "
                                                             "characters (FIRMSIFT_MAX_ROW_CHARS)")
                if line.strip():
                    yield line.strip()

    def command(self, visitor: Visitor, body: SpooledBody, query: Mapping[str, str]) -> SubmitBatch:
        classifier = query.get("classifier", DEFAULT_CLASSIFIER)
        identity = hashlib.sha256(f"web\n{self.column}\n{classifier}\n{body.sha256}".encode()).hexdigest()
        return SubmitBatch(classifier, self.rows(), self.read_domain, identity,
                           tuple(self.columns) if self.csv is not None else None, None, visitor.caller)

    def close(self) -> None:
        if self.csv is not None:
            self.csv.close()


def _guessed_column(body: SpooledBody) -> str:
    """The column the CLI would guess, else the first one."""
    try:
        with CsvReader(body.path, detect_format(body.path)) as reader:
            header = list(reader.header)
    except CsvFileError as error:
        raise BodyRejected(400, "bad_csv", str(error).replace(f"{body.path}: ", "the file: ")) from None
    if not header:
        raise BodyRejected(400, "bad_csv", "the file has no header row")
    try:
        return header[find_column(header, None, COLUMN_GUESSES)]
    except CsvFileError:
        return header[0]


def _previewed(row: InputRow, read_domain: Callable[[object], str]) -> dict[str, Any]:
    value = row.value
    try:
        if isinstance(value, DomainRejected):
            raise value
        domain, reason = read_domain(value), None
    except DomainRejected as rejected:
        domain, reason = None, str(rejected)
    return {"index": row.position, "line": row.line, "value": value if isinstance(value, str) else str(value),
            "domain": domain, "rejection": reason}
