"""`firmsift companies import`: read a CSV of known CPG companies, keep good rows, report bad ones."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from firmsift.domain.model import KnownCompany
from firmsift.domain.normalize import DomainRejected, normalize_domain


@dataclass
class CompanyRows:
    companies: dict[str, KnownCompany] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class CompanyFileError(ValueError):
    """The file as a whole cannot be read (missing, not UTF-8, no `domain` column)."""


def read_company_rows(path: Path) -> CompanyRows:
    """Every valid row (normalized, last one wins per domain), and one message per bad row with its line number."""
    rows = CompanyRows()
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            fields = [name.strip().lower() for name in reader.fieldnames or []]
            if "domain" not in fields:
                raise CompanyFileError(f"{path}: no 'domain' column in the header (found: {', '.join(fields) or 'nothing'})")
            reader.fieldnames = fields
            for record in reader:
                _read_row(reader.line_num, record, rows)
    except FileNotFoundError:
        raise CompanyFileError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise CompanyFileError(f"{path}: not UTF-8 text") from None
    except csv.Error as error:
        raise CompanyFileError(f"{path}: not a readable CSV file: {error}") from None
    return rows


def _read_row(line: int, record: dict[str, str | None], rows: CompanyRows) -> None:
    raw = (record.get("domain") or "").strip()
    name = (record.get("name") or "").strip()
    try:
        domain = normalize_domain(raw)
    except DomainRejected as rejected:
        rows.problems.append(f"line {line}: domain {raw!r} {rejected}")
        return
    rows.companies[domain] = KnownCompany(domain=domain, name=name)
