"""The rows of `firmsift classify`: each input row, the domain taken from its cell, and its answer,
written back with every input column in input order and the answer columns appended."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from typing import Any, TextIO

from firmsift.domain.cell_host import TakenHost, domain_from_cell
from firmsift.domain.normalize import DomainRejected
from firmsift.domain.spreadsheet_cells import inert_cell

REJECTED = "REJECTED"
# `classified_domain` says what was taken from the cell (normalized); the rest is the API's answer.
# The cost columns are the API's: what the job spent on the domain, then the answer's own call.
ANSWER_COLUMNS = ("classified_domain", "status", "answer", "confidence", "reason", "source", "evidence",
                  "evidence_status", "search_provider", "evidence_reused_from", "evidence_searched_at", "quote",
                  "quote_status", "site_status", "redirected_to",
                  "redirected_answer", "tokens_in", "tokens_out", "cost_usd", "answer_tokens_in", "answer_tokens_out", "answer_cost_usd", "error", "job_id")
_COST_COLUMNS = ANSWER_COLUMNS[ANSWER_COLUMNS.index("tokens_in"):ANSWER_COLUMNS.index("error")]
CLASH_PREFIX = "firmsift_"


@dataclass
class Row:
    """One input row. `domain` is None when the row is rejected (`error` says why); `result` is the API's
    answer for the domain (a result of the job document) once it is finished."""

    line: int
    cells: list[str]
    cell: str
    domain: str | None = None
    taken: TakenHost | None = None
    error: str | None = None
    extra: list[str] = field(default_factory=list)
    result: dict[str, Any] | None = None
    job_id: str | None = None

    @property
    def finished(self) -> bool:
        return self.domain is None or self.result is not None

    @property
    def status(self) -> str:
        if self.domain is None:
            return REJECTED
        return str((self.result or {}).get("status") or "PENDING")

    def reject(self, reason: str) -> None:
        self.domain, self.error = None, reason


def read_row(line: int, cells: list[str], width: int, column: int) -> Row:
    """The row as read: padded to the header's width; cells past it are kept (written after the
    answer columns) and, unless empty, make the row rejected: its columns no longer line up."""
    padded = cells[:width] + [""] * (width - len(cells))
    extra = cells[width:]
    row = Row(line, padded, padded[column], extra=extra)
    if any(value.strip() for value in extra):
        row.reject(f"has {len(cells)} cells but the header has {width}: a delimiter inside an unquoted cell?")
        return row
    row.extra = []
    try:
        found = domain_from_cell(row.cell)
    except DomainRejected as rejected:
        row.reject(str(rejected))
    else:
        row.domain, row.taken = found.domain, found.taken
    return row


def answer_column_names(header: list[str]) -> list[str]:
    """ANSWER_COLUMNS, each prefixed (`firmsift_`, then `firmsift2_`, …) when any of them is already an
    input column (ignoring case), so no input column is shadowed and the answers stay together."""
    taken = {name.strip().casefold() for name in header}
    prefix, attempt = "", 1
    while any(f"{prefix}{name}".casefold() in taken for name in ANSWER_COLUMNS):
        attempt += 1
        prefix = CLASH_PREFIX if attempt == 2 else f"firmsift{attempt - 1}_"
    return [f"{prefix}{name}" for name in ANSWER_COLUMNS]


def answer_fields(row: Row) -> dict[str, Any]:
    """The answer of a row as JSON values, in ANSWER_COLUMNS order (keys without any prefix)."""
    result = row.result or {}
    return {
        "classified_domain": row.domain or "",
        "status": row.status,
        "answer": result.get("answer"),
        "confidence": result.get("confidence"),
        "reason": result.get("reason") or "",
        "source": result.get("source"),
        "evidence": result.get("evidence") or [],
        "evidence_status": result.get("evidence_status"),
        "search_provider": result.get("search_provider"),
        "evidence_reused_from": result.get("evidence_reused_from"),
        "evidence_searched_at": result.get("evidence_searched_at"),
        "quote": result.get("quote"),
        "quote_status": result.get("quote_status"),
        "site_status": result.get("site_status"),
        "redirected_to": result.get("redirected_to"),
        "redirected_answer": result.get("redirected_answer"),
        **{name: result.get(name) for name in _COST_COLUMNS},
        "error": row.error if row.domain is None else result.get("error"),
        "job_id": row.job_id,
    }


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):  # a cost: fixed-point (0.000015, not 1.5e-05), exact to 1e-12 USD
        return format(value, ".12f").rstrip("0").rstrip(".")
    return inert_cell(str(value))


class CsvRowWriter:
    """Writes the header (input columns, then the answer columns), then each row as it is finished.
    The caller's own cells are written as read; answer cells that a spreadsheet would run as a
    formula are made inert (see `inert_cell`)."""

    def __init__(self, out: TextIO, header: list[str], delimiter: str = ",", *, resumed: bool = False) -> None:
        """`resumed`: `out` already holds the header and some rows (a resumed run): write no header."""
        self._writer = csv.writer(out, delimiter=delimiter)
        if not resumed:
            self._writer.writerow([*header, *answer_column_names(header)])

    def write(self, row: Row) -> None:
        fields = answer_fields(row)
        fields["evidence"] = " ".join(str(e.get("url", "")) for e in fields["evidence"])
        self._writer.writerow([*row.cells, *(_cell(v) for v in fields.values()), *row.extra])

    def close(self) -> None:
        pass


class JsonRowWriter:
    """A JSON array written one object per row as rows are finished: {"line", "input": {column: cell}, answer…}."""

    def __init__(self, out: TextIO, header: list[str], *, resumed: bool = False) -> None:
        """`resumed`: `out` already holds the array's start and some rows (a resumed run)."""
        self._out, self._header, self._first = out, header, not resumed
        if not resumed:
            out.write("[")

    def write(self, row: Row) -> None:
        document = {"line": row.line, "input": dict(zip(self._header, row.cells)), **answer_fields(row)}
        if row.extra:
            document["extra_cells"] = row.extra
        self._out.write(("\n" if self._first else ",\n") + json.dumps(document, ensure_ascii=False))
        self._first = False

    def close(self) -> None:
        self._out.write("\n]\n")
