"""Reading a known-companies CSV: names from the file are made storable before they are imported."""

from pathlib import Path

from firmsift.domain.model import KnownCompany
from firmsift.entrypoints.cli.company_import import read_company_rows


def test_a_nul_in_a_company_name_is_replaced_not_imported(tmp_path: Path) -> None:
    path = tmp_path / "companies.csv"
    path.write_text("domain,name\nsnacks.com,Snack\x00 Co\nsoap.com,Soap Ltd \N{EM DASH} UK\n", encoding="utf-8")
    rows = read_company_rows(path)
    assert rows.companies == {"snacks.com": KnownCompany("snacks.com", "Snack\ufffd Co"),
                              "soap.com": KnownCompany("soap.com", "Soap Ltd \N{EM DASH} UK")}
    assert rows.problems == []
