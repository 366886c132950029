"""inert_cell and cell_text: no cell a spreadsheet would run, and every cell reads back as the text
it was made from (the human answers' export is imported back unchanged); the caller's cells kept."""

import csv
import io

from hypothesis import given
from hypothesis import strategies as st

from firmsift.domain.spreadsheet_cells import FORMULA_STARTS, cell_text, inert_cell
from firmsift.entrypoints.cli.classify_rows import CsvRowWriter, read_row

# Texts that start with any run of apostrophes and formula characters, then anything: the cases
# where escaping could be ambiguous are all in here, not left to chance.
_LEADING = st.text(alphabet=["'", *FORMULA_STARTS, " ", "a"], max_size=6)
TEXTS = st.one_of(st.text(), st.builds(lambda head, rest: head + rest, _LEADING, st.text()))


@given(TEXTS)
def test_no_cell_starts_as_a_formula(text: str) -> None:
    cell = inert_cell(text)
    assert not cell.startswith(FORMULA_STARTS)
    assert cell in (text, "'" + text)


@given(TEXTS)
def test_reading_a_cell_back_gives_the_text_it_was_made_from(text: str) -> None:
    assert cell_text(inert_cell(text)) == text


@given(TEXTS)
def test_a_cell_reads_back_through_a_csv_file_unchanged(text: str) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow([inert_cell(text), "next"])
    [cells] = list(csv.reader(io.StringIO(out.getvalue(), newline="")))
    assert [cell_text(cell) for cell in cells] == [text, "next"]


def test_only_what_a_spreadsheet_would_run_gains_an_apostrophe() -> None:
    assert inert_cell("Makes crisps and dips.") == "Makes crisps and dips."
    assert inert_cell("'tis the season") == "'tis the season"
    assert inert_cell("' =1") == "' =1"
    assert inert_cell("") == ""
    assert inert_cell("=HYPERLINK(x)") == "'=HYPERLINK(x)"
    # Text that itself starts like an escaped formula gains one more apostrophe, so reading it
    # back cannot take it for an escaped one.
    assert inert_cell("'=HYPERLINK(x)") == "''=HYPERLINK(x)"
    assert inert_cell("''-1") == "'''-1"


def test_a_cell_nobody_escaped_reads_as_it_is() -> None:
    """A hand-written file is read as written unless a cell is one inert_cell could have made."""
    for cell in ("'tis the season", "'", "''", "' =1", "plain", "", "=1+1"):
        assert cell_text(cell) == cell
    assert cell_text("'=1+1") == "=1+1" and cell_text("'''@a") == "''@a"


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
