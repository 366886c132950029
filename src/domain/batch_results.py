"""A batch's result lines (GET /batches/{id}/results): one per input row, in input order, with the
caller's original values and the answer fields a job document shows for the row's domain."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from firmsift.domain.batches import Batch, BatchRow
from firmsift.domain.job_document import result_document
from firmsift.domain.model import DomainResult
from firmsift.domain.spreadsheet_cells import inert_cell

REJECTED = "REJECTED"
JSON_INPUT_COLUMN = "input"  # the CSV column holding a JSON list's item
CLASH_PREFIX = "firmsift_"


@dataclass(frozen=True)
class RowResult:
    """A row with its domain's result and state (batches.domain_state); for a rejected row both
    are None. `job_error` is the error of the row's job, shown when the job ended without it."""

    row: BatchRow
    state: str | None = None
    result: DomainResult | None = None
    job_error: str | None = None


def answer_fields(item: RowResult) -> dict[str, Any]:
    """The answer of one row: `classified_domain` (what was taken from the row, normalized), then
    every field of the job document's result but its domain, with the batch state as status."""
    fields = result_document(item.result or DomainResult(domain=item.row.domain or ""))
    del fields["domain"]
    fields["status"] = item.state or REJECTED
    if item.row.rejection is not None:
        fields["error"] = item.row.rejection
    elif item.state in ("FAILED", "CANCELLED") and fields.get("error") is None:
        fields["error"] = item.job_error
    # The job that answered the row, as `firmsift classify` writes it: (job_id, classified_domain) counts a cost once.
    return {"classified_domain": item.row.domain, **fields, "job_id": item.row.job_id}


def json_line(batch: Batch, item: RowResult) -> str:
    """The row's index (and CSV line), its input as sent ({column: cell} for a CSV upload, with
    `extra_cells` past the header's width; the item itself for a JSON list) and its answer."""
    values = json.loads(item.row.original)
    document: dict[str, Any] = {"index": item.row.position}
    if item.row.line is not None:
        document["line"] = item.row.line
    if batch.columns is None:
        document["input"] = values
    else:
        document["input"] = dict(zip(batch.columns, values))
        if len(values) > len(batch.columns):
            document["extra_cells"] = values[len(batch.columns):]
    return json.dumps({**document, **answer_fields(item)}, ensure_ascii=False) + "\n"


def input_columns(batch: Batch) -> list[str]:
    return list(batch.columns) if batch.columns is not None else [JSON_INPUT_COLUMN]


def csv_header(batch: Batch, answer_names: Sequence[str]) -> str:
    """The input columns, then the answer columns: prefixed (`firmsift_`, `firmsift2_`, …) when
    any of them is already an input column, ignoring case, so no input column is shadowed."""
    header = input_columns(batch)
    taken = {name.strip().casefold() for name in header}
    prefix, attempt = "", 1
    while any(f"{prefix}{name}".casefold() in taken for name in answer_names):
        attempt += 1
        prefix = CLASH_PREFIX if attempt == 2 else f"firmsift{attempt - 1}_"
    return _csv_record([*header, *(f"{prefix}{name}" for name in answer_names)])


def csv_line(batch: Batch, item: RowResult) -> str:
    """The caller's cells as sent, then the answer cells made inert for spreadsheets (the
    answers carry web and model text), then any cells past the header's width (as the CLI writes
    them). Evidence is its URLs, space-separated."""
    values = json.loads(item.row.original)
    cells = [str(v) for v in values] if batch.columns is not None else [_input_cell(values)]
    width = len(input_columns(batch))
    fields = answer_fields(item)
    fields["evidence"] = " ".join(str(e.get("url", "")) for e in fields["evidence"])
    return _csv_record([*cells[:width], *(_answer_cell(v) for v in fields.values()), *cells[width:]])


def answer_names() -> list[str]:
    """The answer columns, in the order csv_line writes them."""
    return list(answer_fields(RowResult(BatchRow(0, None, "null"))))


def _input_cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _answer_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return inert_cell(str(value))


def _csv_record(cells: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(cells)
    return out.getvalue()
