"""Text bound for a CSV cell that a spreadsheet would otherwise run as a formula (CSV injection).

A reason, a quote, an error or an evidence URL comes from web pages and model output, so it is
untrusted: a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula to
Excel, LibreOffice and Google Sheets (OWASP, "CSV Injection"). Such a cell is written with a
leading apostrophe, which the spreadsheets show as text and do not display; JSON output keeps the
value as it is.
"""

from __future__ import annotations

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(text: str) -> str:
    """`text`, with an apostrophe put in front when a spreadsheet would read it as a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text
