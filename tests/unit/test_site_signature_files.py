"""The signature files: the packaged ones load and cite their sources; a malformed one stops the
load with a message naming file, entry and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmsift.adapters.files.site_signatures import (
    SignatureFileError,
    load_signatures,
    parse_parking,
    parse_walls,
)
from firmsift.domain.site_signatures import ParkingKind


def test_the_packaged_files_load_and_every_entry_cites_a_source() -> None:
    signatures = load_signatures()

    entries = [*signatures.parking_infrastructure, *signatures.parking_pages, *signatures.walls]
    assert len(signatures.walls) >= 20 and len(signatures.parking_infrastructure) >= 10
    assert all("https://" in entry.source for entry in entries)
    github = [entry.source for entry in entries if "github.com" in entry.source]
    assert all("/blob/" in source or "/tree/" in source for source in github)  # pinned to a commit


def test_an_entry_reads_into_the_domain_types() -> None:
    found = parse_parking("p.toml", """
[[infrastructure]]
service = "ParkCo"
kind = "marketplace"
hosts = ["NS.ParkCo.example."]
networks = ["192.0.2.0/24", "2001:db8::/32"]
source = "https://example.org/list"

[[page]]
service = ""
kind = "for_sale"
statuses = [200]
headers = { X-Parked = "" }
text_all = ["{domain} is for sale"]
source = "https://example.org/page"
""")
    (infrastructure,), (page,) = found.parking_infrastructure, found.parking_pages
    assert infrastructure.hosts == ("ns.parkco.example",) and infrastructure.kind is ParkingKind.MARKETPLACE
    assert [str(n) for n in infrastructure.networks] == ["192.0.2.0/24", "2001:db8::/32"]
    assert page.markers.statuses == frozenset({200}) and page.markers.headers == (("x-parked", ""),)


WALL = """
[[wall]]
service = "WallCo"
what = "challenge"
source = "https://example.org"
"""


@pytest.mark.parametrize(("extra", "names"), [
    ('txt_all = ["x"]', "walls.toml: wall #1 ('WallCo'): txt_all: unknown field"),
    ('statuses = [700]\ntext_all = ["x"]', "wall #1 ('WallCo'): statuses: must be a list of HTTP status codes"),
    ('statuses = [true]\ntext_all = ["x"]', "statuses: must be a list of HTTP status codes"),
    ('text_all = ["  "]', "wall #1 ('WallCo'): text_all: must be a list of non-empty strings"),
    ('text_all = ["{domian} is"]', "text_all: '{domian} is': unknown placeholder {domian} (only {domain})"),
    ('headers = { "bad header" = "x" }', "headers: 'bad header': a header name, with a string value"),
    ('title_any = "Just a moment"', "title_any: must be a list of non-empty strings"),
    ("", "wall #1 ('WallCo'): headers/title_any/text_all: an entry needs at least one of them"),
])
def test_a_malformed_wall_names_file_entry_and_field(extra: str, names: str) -> None:
    with pytest.raises(SignatureFileError) as raised:
        parse_walls("walls.toml", WALL + extra)
    assert names in str(raised.value)


@pytest.mark.parametrize(("body", "names"), [
    ('service = "P"\nkind = "parked"\nhosts = ["a.example"]\nsource = "s"', "infrastructure #1 ('P'): kind: 'parked' is not one of"),
    ('service = "P"\nkind = "parking"\nhosts = ["bad host"]\nsource = "s"', "hosts: 'bad host': not a host name"),
    ('service = "P"\nkind = "parking"\nnetworks = ["192.0.2.1/24"]\nsource = "s"', "networks: '192.0.2.1/24': not a CIDR block"),
    ('service = "P"\nkind = "parking"\nsource = "s"', "hosts/networks/landing_hosts: an entry needs at least one"),
    ('kind = "parking"\nhosts = ["a.example"]\nsource = "s"', "infrastructure #1: service: missing"),
    ('service = "P"\nkind = "parking"\nhosts = ["a.example"]', "infrastructure #1 ('P'): source: missing"),
])
def test_a_malformed_parking_entry_names_file_entry_and_field(body: str, names: str) -> None:
    with pytest.raises(SignatureFileError) as raised:
        parse_parking("parking.toml", "[[infrastructure]]\n" + body)
    assert str(raised.value).startswith("parking.toml: ")
    assert names in str(raised.value)


def test_bad_toml_and_unknown_tables_name_the_file() -> None:
    with pytest.raises(SignatureFileError, match=r"^walls.toml: not valid TOML"):
        parse_walls("walls.toml", "[[wall]\n")
    with pytest.raises(SignatureFileError, match=r"^walls.toml: walls: unknown table \(allowed: wall\)"):
        parse_walls("walls.toml", "[[walls]]\nservice = 'x'\n")
    with pytest.raises(SignatureFileError, match=r"^walls.toml: wall #1: must be a table"):
        parse_walls("walls.toml", "wall = [1]\n")


def test_an_operator_folder_adds_entries(tmp_path: Path) -> None:
    (tmp_path / "walls.toml").write_text(WALL + 'title_any = ["Hold on"]\n')
    packaged = load_signatures()

    extended = load_signatures(tmp_path)

    assert len(extended.walls) == len(packaged.walls) + 1 and extended.walls[-1].service == "WallCo"
    assert extended.parking_pages == packaged.parking_pages
    with pytest.raises(SignatureFileError, match="does not exist"):
        load_signatures(tmp_path / "missing")
    (tmp_path / "parking.toml").write_text("[[page]]\nservice = 1\n")
    with pytest.raises(SignatureFileError, match=r"parking.toml: page #1: service: missing, or not a non-empty string"):
        load_signatures(tmp_path)
