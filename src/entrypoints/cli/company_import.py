"""`firmsift companies import`: read a CSV of known CPG companies, keep good rows, report bad ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from firmsift.domain.model import KnownCompany
from firmsift.domain.normalize import DomainRejected, normalize_domain
from firmsift.domain.outside_text import storable
from firmsift.entrypoints.files.csv_files import read_csv_records


@dataclass
class CompanyRows:
    companies: dict[str, KnownCompany] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def read_company_rows(path: Path) -> CompanyRows:
    """Every valid row (normalized, last one wins per domain), and one message per bad row with its line number.
    Raises CsvFileError when the file cannot be read or has no `domain` column."""
    rows = CompanyRows()
    for line, record in read_csv_records(path, ("domain",)):
        _read_row(line, record, rows)
    return rows


def _read_row(line: int, record: dict[str, str], rows: CompanyRows) -> None:
    raw = record.get("domain", "")
    name = record.get("name", "")
    try:
        domain = normalize_domain(raw)
    except DomainRejected as rejected:
        rows.problems.append(f"line {line}: domain {raw!r} {rejected}")
        return
    rows.companies[domain] = KnownCompany(domain=domain, name=storable(name))
