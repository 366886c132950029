import csv
import io

from hypothesis import given
from hypothesis import strategies as st

from firmsift.domain.spreadsheet_cells import FORMULA_STARTS, inert_cell
from firmsift.entrypoints.cli.classify_rows import CsvRowWriter, read_row


@given(st.text())
def test_no_cell_starts_as_a_formula_and_nothing_is_lost(text: str) -> None:
    cell = inert_cell(text)
    assert not cell.startswith(FORMULA_STARTS)
    assert cell in (text, "'" + text)
    assert (cell == text) == (not text.startswith(FORMULA_STARTS))


def test_ordinary_text_is_written_as_it_is() -> None:
    assert inert_cell("Makes crisps and dips.") == "Makes crisps and dips."
    assert inert_cell("'quoted already") == "'quoted already"
    assert inert_cell("") == ""


def test_answer_cells_from_the_web_are_inert_and_the_callers_cells_are_kept() -> None:
    out = io.StringIO()
    writer = CsvRowWriter(out, ["name", "website"])
    row = read_row(2, ["=SUM(A1:A2)", "acme.com"], 2, 1)
    row.result = {"status": "DONE", "answer": True, "confidence": 4,
                  "reason": '=HYPERLINK("http://evil.example","click")', "quote": "+1 555 0100",
                  "evidence": [{"url": "https://acme.com/"}], "source": "llm"}
    writer.write(row)
    header, written = list(csv.reader(io.StringIO(out.getvalue())))
    cells = dict(zip(header, written))
    assert cells["name"] == "=SUM(A1:A2)"  # the caller's own data, as read
    assert cells["reason"] == '\'=HYPERLINK("http://evil.example","click")'
    assert cells["quote"] == "'+1 555 0100"
    assert cells["evidence"] == "https://acme.com/"
    assert cells["confidence"] == "4" and cells["answer"] == "true"
