"""Reading the CSV files people export: encodings, delimiters, quoted newlines, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmsift.entrypoints.files.csv_files import CsvFileError
from firmsift.entrypoints.files.csv_stream import CsvReader, detect_format, find_column

TABLE = [["Company", "Website", "Notes"], ["Nestlé", "nestle.com", "line one\nline two"], ["Ülker", "ulker.com.tr", ""]]


def _text(delimiter: str) -> str:
    def cell(value: str) -> str:
        return f'"{value}"' if "\n" in value or delimiter in value else value
    return "".join(delimiter.join(cell(c) for c in row) + "\r\n" for row in TABLE)


def _read(path: Path, **options: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    with CsvReader(path, detect_format(path, **options)) as reader:
        return reader.header, list(reader)


@pytest.mark.parametrize(
    ("encoding", "delimiter", "expected_codec", "bom"),
    [
        ("utf-8", ",", "utf-8", False),
        ("utf-8-sig", ",", "utf-8-sig", True),  # Excel's "CSV UTF-8"
        ("utf-8-sig", ";", "utf-8-sig", True),  # Excel in a locale with a decimal comma
        ("utf-16", "\t", "utf-16", True),  # Excel's "Unicode Text"
        ("utf-16-le", ",", "utf-16-le", False),
        ("utf-16-be", ";", "utf-16-be", False),
        ("utf-8", "|", "utf-8", False),
    ],
)
def test_exports_are_read_whatever_their_encoding_and_delimiter(
        tmp_path: Path, encoding: str, delimiter: str, expected_codec: str, bom: bool) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes(_text(delimiter).encode(encoding))
    fmt = detect_format(path)
    assert (fmt.encoding, fmt.delimiter, fmt.bom) == (expected_codec, delimiter, bom)
    header, rows = _read(path)
    assert header == TABLE[0]
    assert rows == [(2, TABLE[1]), (4, TABLE[2])]  # the quoted newline keeps its row whole; lines counted


def test_a_comma_file_with_semicolons_inside_cells_stays_comma(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("name,website\nKroger,thekrogerco.com; kroger.com\nAcme,acme.com;acme.de\n")
    assert detect_format(path).delimiter == ","


def test_a_semicolon_file_with_decimal_commas_stays_semicolon(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("name;website;revenue\nA;a.com;1,5\nB;b.com;2,75\n")
    assert detect_format(path).delimiter == ";"


def test_a_single_column_file_reads_as_comma(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("website\nacme.com\n")
    assert detect_format(path).delimiter == ","


def test_the_delimiter_is_sniffed_past_a_sample_cut_mid_record(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("a;b;c\n" + "x;y;\"long, cell\nwith a newline\"\n" * 5000)
    assert detect_format(path).delimiter == ";"


def test_windows_1252_needs_naming_and_then_reads(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes("name,website\nNestlé,nestle.com\n".encode("cp1252"))
    with pytest.raises(CsvFileError, match=r"line 2: not utf-8 text; name the file's encoding with --encoding"):
        _read(path)
    assert _read(path, encoding="cp1252")[1] == [(2, ["Nestlé", "nestle.com"])]


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), (b"", "is empty"), (b"a,b\n" + b"x" * 200_000 + b",z\n", "line 2: not readable as CSV: field larger")],
)
def test_unreadable_files_say_why(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "in.csv"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CsvFileError, match=message):
        _read(path)


def test_unknown_encoding_and_long_delimiter_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("a\n")
    with pytest.raises(CsvFileError, match="unknown encoding 'klingon'"):
        detect_format(path, encoding="klingon")
    with pytest.raises(CsvFileError, match="one character"):
        detect_format(path, delimiter=";;")


def test_a_column_is_found_ignoring_case_spaces_and_invisible_marks() -> None:
    header = ["\ufeffCompany", " Official  Website ", "Notes"]
    assert find_column(header, "official website", ()) == 1
    assert find_column(header, "Company", ()) == 0
    assert find_column(["Name", "URL"], None, ("domain", "website", "url")) == 1
    assert find_column(["Name", "Official website", "Notes"], None, ("domain", "website")) == 1
    assert find_column(["Websites", "Company URL"], None, ("domain", "url")) == 1  # a whole word only


def test_a_missing_column_names_the_columns_found() -> None:
    with pytest.raises(CsvFileError, match=r"no column 'website' \(found: 'Name', 'Web', 'Notes'\)"):
        find_column(["Name", "Web", "Notes"], "website", ())
    with pytest.raises(CsvFileError, match=r"no column named 'domain' or 'website': name it with --column "
                                           r"\(found: 'Name'\)"):
        find_column(["Name"], None, ("domain", "website"))
    with pytest.raises(CsvFileError, match="2 columns could hold the domains: name one with --column"):
        find_column(["Company website", "Parent website"], None, ("domain", "website"))
    with pytest.raises(CsvFileError, match="2 columns named 'site'"):
        find_column(["Site", "SITE"], "site", ())
