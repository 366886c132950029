"""Text bound for a CSV cell that a spreadsheet would otherwise run as a formula (CSV injection),
and the rule that reads such a cell back as the text it was made from.

A reason, a quote, an error, an evidence URL or a person's note is untrusted text (web pages,
model output, a pasted page): a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return
is a formula to Excel, LibreOffice and Google Sheets (OWASP, "CSV Injection"). Such a cell is
written with a leading apostrophe, which the spreadsheets show as text and do not display; JSON
output keeps the value as it is.

So that a file we wrote reads back as exactly what we wrote (`firmsift answers import` of our own
export changes nothing), the escaping is reversible: text that starts with apostrophes followed by
one of those characters (`'=1` as typed) gains one more apostrophe too, and reading a cell removes
one apostrophe from exactly those cells. Any other cell, such as `'tis`, is written and read as it is.
"""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_ESCAPE = "'"


def inert_cell(text: str) -> str:
    """`text`, with an apostrophe put in front when a spreadsheet would read it as a formula, or
    when it already starts like a cell escaped that way (so `cell_text` can tell the two apart)."""
    return _ESCAPE + text if _escaped_form(text) else text


def cell_text(cell: str) -> str:
    """The text `inert_cell` made `cell` from: one leading apostrophe removed when what follows is
    apostrophes and then a formula character; any other cell as it is."""
    return cell[1:] if cell.startswith(_ESCAPE) and _escaped_form(cell[1:]) else cell


def _escaped_form(text: str) -> bool:
    """Whether `text` is apostrophes (none or more) followed by a formula character."""
    return text.lstrip(_ESCAPE).startswith(FORMULA_STARTS)
