"""Reading the CSV files users hand to commands: one error type naming the file and the problem."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path


class CsvFileError(ValueError):
    """The file as a whole cannot be read (missing, not UTF-8, not CSV, a required column absent)."""


def read_csv_records(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """(line number, record) for every row, with column names stripped and lower-cased and
    missing cells as ''. Raises CsvFileError when a column in `required` is not in the header."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            fields = [name.strip().lower() for name in reader.fieldnames or []]
            missing = [name for name in required if name not in fields]
            if missing:
                raise CsvFileError(f"{path}: no {', '.join(repr(m) for m in missing)} column in the header "
                                   f"(found: {', '.join(fields) or 'nothing'})")
            reader.fieldnames = fields
            return [(reader.line_num, {key: (value or "").strip() for key, value in record.items()
                                       if isinstance(key, str)}) for record in reader]
    except FileNotFoundError:
        raise CsvFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CsvFileError(f"{path}: is a folder, not a CSV file") from None
    except UnicodeDecodeError:
        raise CsvFileError(f"{path}: not UTF-8 text") from None
    except csv.Error as error:
        raise CsvFileError(f"{path}: not a readable CSV file: {error}") from None
