"""Whole numbers a request gives as text (query parameters, form fields), read within their range
or refused with 400 `bad_<name>`: the one rule for every number the API and the web app read."""

from __future__ import annotations

from collections.abc import Mapping

from firmsift.entrypoints.http.errors import BodyRejected

# The largest integer SQLite's INTEGER and PostgreSQL's BIGINT hold: a row index past it names no
# row, and SQLite cannot even bind it (the driver raises OverflowError).
LARGEST_ROW_INDEX = 2**63 - 1
SHOWN_CHARS = 40  # of a refused value, echoed in the message


def whole_number(values: Mapping[str, str], name: str, *, low: int, high: int, default: int) -> int:
    """`values[name]` as a whole number from `low` to `high` (ASCII digits only: no sign, space,
    point or exponent), `default` when it is absent; else 400 `bad_<name>` saying the range.
    A value longer than `high` is refused before int() reads it: Python refuses int() of over
    4,300 digits, and a CPU spent on a megabyte of nines is spent for nothing."""
    text = values.get(name)
    if text is None:
        return default
    digits = text.lstrip("0") or "0"
    if not (text.isascii() and text.isdigit()) or len(digits) > len(str(high)) or not low <= int(digits) <= high:
        shown = repr(text) if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]!r}… ({len(text)} characters)"
        raise BodyRejected(400, f"bad_{name}", f"{name} must be a whole number from {low} to {high}, not {shown}")
    return int(digits)
