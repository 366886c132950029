"""A batch's result lines (GET /batches/{id}/results): one per input row, in input order, with the
caller's original values and the answer fields a job document shows for the row's domain."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from firmsift.domain.batches import Batch, BatchRow
from firmsift.domain.job_document import result_document
from firmsift.domain.model import DomainResult
from firmsift.domain.spreadsheet_cells import FORMULA_STARTS, inert_cell

REJECTED = "REJECTED"
JSON_INPUT_COLUMN = "input"  # the CSV column holding a JSON list's item
CLASH_PREFIX = "firmsift_"


class ShownResult(NamedTuple):
    """A domain's result as a job document shows it (job_document.result_document), but its
    domain: the values a result line writes, in order. A store reads them straight from its
    rows (100,000 of them for a batch's results) rather than through a DomainResult."""

    status: str
    answer: bool | None
    confidence: int | None
    reason: str
    source: str | None
    evidence: list[dict[str, str]]  # {"url", "title"} of each piece
    evidence_status: str | None
    search_provider: str | None
    evidence_reused_from: str | None
    evidence_searched_at: str | None  # ISO 8601
    quote: str | None
    quote_status: str | None
    site_status: str | None
    redirected_to: str | None
    redirected_answer: bool | None
    error: str | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    answer_tokens_in: int | None
    answer_tokens_out: int | None
    answer_cost_usd: float | None


def shown_result(result: DomainResult) -> ShownResult:
    fields = result_document(result)
    del fields["domain"]
    return ShownResult(**fields)


NO_RESULT = shown_result(DomainResult(domain=""))  # what a rejected row shows
# json.dumps(document, ensure_ascii=False), without building an encoder for each line.
_ENCODE = json.JSONEncoder(ensure_ascii=False).encode
_STRING = json.encoder.encode_basestring  # what _ENCODE writes for a str
_DECODE = json.JSONDecoder().raw_decode  # text this module or a store wrote: no space around it


def shown_members(result: ShownResult) -> str:
    """The result's fields as a result line writes them: JSON members in field order, no braces.
    A store may keep this with a DONE result (RowResult.shown) so that reading it back for a
    line needs neither decoding nor encoding."""
    return _ENCODE(dict(zip(ShownResult._fields, result)))[1:-1]


class RowResult:
    """A row with its domain's result and state (batches.domain_state); for a rejected row both
    are None. `job_error` is the error of the row's job, shown when the job ended without it.

    `shown` is the result's shown_members, where the store kept them with a DONE result: the
    line of a DONE row is then written from that text, and `result` is read from it only when
    asked for (a CSV line, the web app)."""

    __slots__ = ("_result", "job_error", "row", "shown", "state")

    def __init__(self, row: BatchRow, state: str | None = None, result: ShownResult | None = None,
                 job_error: str | None = None, shown: str | None = None) -> None:
        self.row, self.state, self._result, self.job_error, self.shown = row, state, result, job_error, shown

    @property
    def result(self) -> ShownResult | None:
        if self._result is None and self.shown is not None:
            self._result = ShownResult(**json.loads("{" + self.shown + "}"))
        return self._result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowResult):
            return NotImplemented
        return (self.row, self.state, self.result, self.job_error) == (other.row, other.state, other.result,
                                                                       other.job_error)

    def __repr__(self) -> str:
        return f"RowResult(row={self.row!r}, state={self.state!r}, result={self.result!r}, job_error={self.job_error!r})"


def answer_fields(item: RowResult) -> dict[str, Any]:
    """The answer of one row: `classified_domain` (what was taken from the row, normalized), then
    every field of the job document's result but its domain, with the batch state as status."""
    return _add_answer({}, item)


def _add_answer(fields: dict[str, Any], item: RowResult) -> dict[str, Any]:
    """`fields` with the row's answer_fields added after what it holds."""
    fields["classified_domain"] = item.row.domain
    fields.update(zip(ShownResult._fields, item.result or NO_RESULT))
    fields["status"] = item.state or REJECTED
    if item.row.rejection is not None:
        fields["error"] = item.row.rejection
    elif item.state in ("FAILED", "CANCELLED") and fields.get("error") is None:
        fields["error"] = item.job_error
    # The job that answered the row, as `firmsift classify` writes it: (job_id, classified_domain) counts a cost once.
    fields["job_id"] = item.row.job_id
    return fields


def json_line(batch: Batch, item: RowResult) -> str:
    """The row's index (and CSV line), its input as sent ({column: cell} for a CSV upload, with
    `extra_cells` past the header's width; the item itself for a JSON list) and its answer."""
    row = item.row
    head = f'{{"index": {row.position}, ' if row.line is None else f'{{"index": {row.position}, "line": {row.line}, '
    if batch.columns is None:
        # The stored original is this very encoder's text of the item (batch_body writes it so).
        head += '"input": ' + row.original
    else:
        values = json.loads(row.original)  # the cells the row has: a short row is stored short
        document: dict[str, Any] = {"input": dict(zip(batch.columns, _padded(values, len(batch.columns))))}
        if len(values) > len(batch.columns):
            document["extra_cells"] = values[len(batch.columns):]
        head += _ENCODE(document)[1:-1]
    return f"{head}, {_answer_json(item)}}}\n"


def json_lines(batch: Batch, items: Iterable[RowResult]) -> str:
    """json_line of each item, joined."""
    return "".join([json_line(batch, item) for item in items])


def _answer_json(item: RowResult) -> str:
    """The row's answer_fields as JSON members (no braces). A DONE row whose store kept its
    shown_members, and a pending row still PENDING, which a store shows as NO_RESULT itself, are
    each their domain and job around a text made before (at save time; once)."""
    if item.shown is not None and item.state == "DONE" and item.row.job_id is not None:
        # Its stored members: status DONE first (the line's status too), then its own fields, error included.
        return f'"classified_domain": {_STRING(item.row.domain)}, {item.shown}, "job_id": {_STRING(item.row.job_id)}'
    if item.result is NO_RESULT and item.state == "PENDING" and item.row.job_id is not None:
        return f'"classified_domain": {_STRING(item.row.domain)}{_PENDING_JSON}{_STRING(item.row.job_id)}'
    return _ENCODE(_add_answer({}, item))[1:-1]


RESULT_CHARS = 8_000_000  # what one page of result lines may hold in memory, about, in characters
ANSWER_CHARS = 1000  # what a line adds to its row's cells, about: the answer, its reason and evidence


def rows_per_page(batch: Batch, widest_row: int, most: int, *, page_chars: int = RESULT_CHARS,
                  per_cell: int = 6) -> int:
    """How many rows a page may hold (at most `most`, at least 1) for its lines to stay within
    `page_chars`, given the batch's widest stored row (its cells as JSON text, in characters)
    and `per_cell` characters a line spends on each column whatever it holds (its name, quotes)."""
    columns = input_columns(batch)
    line = widest_row + sum(len(name) + per_cell for name in columns) + ANSWER_CHARS
    return max(1, min(most, page_chars // line))


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
    return csv_lines(batch, (item,))


def csv_lines(batch: Batch, items: Iterable[RowResult]) -> str:
    """csv_line of each item, joined: one writer for them all."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    width = len(input_columns(batch))
    for item in items:
        values = _DECODE(item.row.original)[0]  # as json.loads, without its checks of surrounding space
        cells = [str(v) for v in values] if batch.columns is not None else [_input_cell(values)]
        writer.writerow([*_padded(cells[:width], width), *_answer_cells(item), *cells[width:]])
    return out.getvalue()


def _padded(cells: list[Any], width: int) -> list[Any]:
    """A row's cells up to the header's width: the cells a short row lacks are empty."""
    return cells + [""] * (width - len(cells)) if len(cells) < width else cells


def _answer_cells(item: RowResult) -> list[str]:
    if item.shown is not None and item.state == "DONE" and item.row.job_id is not None:  # as _answer_json
        return _done_cells(item.row.domain, item.shown, item.row.job_id)
    if item.result is NO_RESULT and item.state == "PENDING" and item.row.job_id is not None:  # as _answer_json
        return [_answer_cell(item.row.domain), *_PENDING_CELLS, _answer_cell(item.row.job_id)]
    fields = answer_fields(item)
    fields["evidence"] = " ".join(str(e.get("url", "")) for e in fields["evidence"])
    return [_answer_cell(v) for v in fields.values()]


def answer_names() -> list[str]:
    """The answer columns, in the order csv_line writes them."""
    return list(answer_fields(RowResult(BatchRow(0, None, "null"))))


def _input_cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _done_cells(domain: str | None, shown: str, job_id: str) -> list[str]:
    """The answer cells of a DONE row from its stored members, as the general path writes them
    (its domain, the result's fields in order with the evidence as its URLs, its job), without a
    ShownResult or a call per cell: the cells of 100,000 rows are 2.4 million (a property test
    holds the two paths equal)."""
    values = _DECODE("{" + shown + "}")[0]
    values["evidence"] = " ".join([str(piece.get("url", "")) for piece in values["evidence"]])
    return [_answer_cell(domain),
            *["" if value is None else "true" if value is True else "false" if value is False
              else "'" + text if (text := value if value.__class__ is str else str(value))[:1] in _FORMULA_FIRST
              and inert_cell(text) != text else text
              for value in values.values()],
            _answer_cell(job_id)]


_FORMULA_FIRST = frozenset(["'", *FORMULA_STARTS])  # a cell inert_cell may change starts with one of these


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


def _pending_parts() -> tuple[str, list[str]]:
    """What a pending row still PENDING shows between its domain and its job id: as JSON members
    and as CSV cells, made once by the general path from a row with placeholders."""
    item = RowResult(BatchRow(0, None, "null", "d", "j"), "PENDING", NO_RESULT)
    members = _ENCODE(_add_answer({}, item))[1:-1]
    head, tail = '"classified_domain": "d"', '"j"'
    assert members.startswith(head) and members.endswith(tail)
    cells = _answer_cells(RowResult(item.row, "PENDING", NO_RESULT._replace()))  # not NO_RESULT: the general path
    return members[len(head):-len(tail)], cells[1:-1]


_PENDING_JSON, _PENDING_CELLS = _pending_parts()
