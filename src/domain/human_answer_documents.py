"""Human answers as callers read them: a JSON document each, or CSV lines that
`firmsift answers import` reads back as the very same answers."""

from __future__ import annotations

import csv
import io
from typing import Any

from firmsift.domain.human_answers import HumanAnswer
from firmsift.domain.model import Source
from firmsift.domain.spreadsheet_cells import cell_text, inert_cell

CSV_COLUMNS = ("domain", "classifier", "answer", "note", "corrected_by", "corrected_at")


def human_answer_document(human: HumanAnswer) -> dict[str, Any]:
    """One human answer as JSON: its key, answer and note, who set it (an API key id or null) and when."""
    return {"domain": human.domain, "classifier": human.classifier, "answer": human.answer,
            "source": Source.HUMAN.value, "note": human.note, "corrected_by": human.corrected_by,
            "corrected_at": human.corrected_at.isoformat()}


def csv_header() -> str:
    return _csv_record(list(CSV_COLUMNS))


def csv_line(human: HumanAnswer) -> str:
    """The columns of CSV_COLUMNS; the answer as true/false. Every cell is made inert for
    spreadsheets (the note is free text, and may come from a pasted web page); `csv_cells` reads
    them back."""
    return _csv_record([human.domain, human.classifier, "true" if human.answer else "false", human.note,
                        human.corrected_by or "", human.corrected_at.isoformat()])


def csv_cells(record: dict[str, str]) -> dict[str, str]:
    """A record of this CSV as the texts `csv_line` wrote: the apostrophe it put in front of a cell
    a spreadsheet would run is taken off again, so importing an export changes nothing."""
    return {column: cell_text(cell) for column, cell in record.items()}


def _csv_record(cells: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow([inert_cell(cell) for cell in cells])
    return out.getvalue()
