"""Reading a POST /batches body: streamed to a temporary file within a byte limit (never held in
memory whole), then read as a JSON list or a CSV upload into rows with their original values."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request

from firmsift.domain.batches import InputRow
from firmsift.domain.normalize import DomainRejected
from firmsift.entrypoints.files.csv_files import CsvFileError
from firmsift.entrypoints.files.csv_stream import CsvReader, CsvRecordTooLong, detect_format, find_column
from firmsift.entrypoints.http.errors import BodyRejected

JSON = "application/json"
CSV = "text/csv"
# What json.dumps(value, ensure_ascii=False) writes, without building an encoder for each row.
ORIGINAL_JSON = json.JSONEncoder(ensure_ascii=False).encode


@dataclass(frozen=True)
class SpooledBody:
    """The body as a file, and the SHA-256 of its bytes (part of what identifies the request)."""

    path: Path
    sha256: str


def content_kind(request: Request) -> str:
    """JSON or CSV, from the Content-Type; 415 for anything else."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in (JSON, CSV):
        raise BodyRejected(415, "unsupported_media_type",
                           f"Content-Type must be {JSON} or {CSV}, not {kind or 'missing'}")
    return kind


async def spool_body(request: Request, folder: Path, max_bytes: int) -> SpooledBody:
    """Write the body to a file in `folder` as it arrives; 413 once it passes `max_bytes`
    (at once when Content-Length says so), 400 when it is empty."""
    declared = request.headers.get("content-length")
    if declared is not None and not (declared.isascii() and declared.isdigit()):
        raise BodyRejected(400, "bad_content_length", "Content-Length must be a whole number of bytes")
    too_large = BodyRejected(413, "body_too_large", f"request body is larger than {max_bytes} bytes "
                                                    "(FIRMSIFT_MAX_BATCH_BODY_BYTES); split the list")
    if declared is not None and (len(declared.lstrip("0")) > len(str(max_bytes)) or int(declared) > max_bytes):
        raise too_large
    path = folder / "body"
    digest = hashlib.sha256()
    size = 0
    with path.open("wb") as out:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise too_large
            digest.update(chunk)
            out.write(chunk)
    if size == 0:
        raise BodyRejected(400, "empty_body", "request body is empty; send a JSON object or a CSV file")
    return SpooledBody(path, digest.hexdigest())


def json_input_rows(domains: Iterable[object]) -> Iterator[InputRow]:
    for position, item in enumerate(domains):
        yield InputRow(position, None, ORIGINAL_JSON(item), item)


class CsvUpload:
    """A CSV upload read as the CLI reads files (encoding from its BOM, delimiter sniffed), with
    the domain column named by the caller: 400 naming the column and those found when absent;
    413 for a header of more than `max_columns` or a row of more than `max_row_chars`."""

    def __init__(self, body: SpooledBody, column: str, *, max_columns: int, max_row_chars: int) -> None:
        self._path = body.path
        try:
            self._reader = CsvReader(body.path, detect_format(body.path), max_record_chars=max_row_chars)
            self.header = tuple(self._reader.header)
            if len(self.header) > max_columns:
                self._reader.close()
                raise BodyRejected(413, "too_many_columns", f"the header has {len(self.header)} columns; at most "
                                                            f"{max_columns} (FIRMSIFT_MAX_CSV_COLUMNS): leave out "
                                                            "the columns firmsift does not need")
            self._column = find_column(self._reader.header, column, ())
        except CsvFileError as error:
            raise self._refusal(error) from None

    def rows(self) -> Iterator[InputRow]:
        """Each record as an InputRow, with the cells it has (a short row is not padded, and empty
        cells past the header's width are left out); a record with further non-empty cells is
        rejected (its columns no longer line up) and keeps them all."""
        width = len(self.header)
        try:
            with self._reader:
                for position, (line, cells) in enumerate(self._reader):
                    value: object = cells[self._column] if self._column < len(cells) else ""
                    if len(cells) > width:
                        if any(cell.strip() for cell in cells[width:]):
                            value = DomainRejected(f"has {len(cells)} cells but the header has {width}: "
                                                   "a delimiter inside an unquoted cell?")
                        else:
                            cells = cells[:width]
                    yield InputRow(position, line, ORIGINAL_JSON(cells), value)
        except CsvFileError as error:
            raise self._refusal(error) from None

    def close(self) -> None:
        self._reader.close()

    def _refusal(self, error: CsvFileError) -> BodyRejected:
        """The CLI's message, said of the upload (not of a temporary file) and of what an HTTP caller can do."""
        message = str(error).replace(f"{self._path}: ", "the upload: ")
        if "; name the file's encoding" in message:
            message = message.split("; name the file's encoding")[0] + " (send UTF-8, or UTF-16 with a byte-order mark)"
        if isinstance(error, CsvRecordTooLong):
            return BodyRejected(413, "row_too_large", f"{message} (FIRMSIFT_MAX_ROW_CHARS)")
        return BodyRejected(400, "bad_csv", message)
