"""Loads the pre-check's signatures (parking services, bot walls) from TOML files.

The packaged files (src/signatures/parking.toml and walls.toml) come first; an operator's folder
may add entries in files of the same names. A malformed file stops the load with a message that
names the file, the entry (table, position and service) and the field, so a typo in a signature
never silently turns a parked domain into a live one, or a live one into a blocked one.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from firmsift.domain.site_signatures import (
    DOMAIN_PLACEHOLDER,
    PageMarkers,
    ParkingInfrastructure,
    ParkingKind,
    ParkingPage,
    Signatures,
    Wall,
    normalized,
)

PARKING_FILE = "parking.toml"
WALLS_FILE = "walls.toml"

_HOST = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
_HEADER_NAME = re.compile(r"^[a-z0-9!#$%&'*+.^_`|~-]{1,100}$")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_MARKER_FIELDS = ("statuses", "headers", "title_any", "text_all")


class SignatureFileError(ValueError):
    """A signature file is unreadable or malformed; the message names file, entry and field."""


def load_signatures(extra_dir: Path | None = None) -> Signatures:
    """The packaged signatures, then those in extra_dir's parking.toml and walls.toml (if any)."""
    packaged = resources.files("firmsift.signatures")
    texts = [(f"firmsift/signatures/{name}", name, packaged.joinpath(name).read_text(encoding="utf-8"))
             for name in (PARKING_FILE, WALLS_FILE)]
    if extra_dir is not None:
        if not extra_dir.is_dir():
            raise SignatureFileError(f"signatures folder {extra_dir} does not exist")
        for name in (PARKING_FILE, WALLS_FILE):
            path = extra_dir / name
            if path.is_file():
                texts.append((str(path), name, path.read_text(encoding="utf-8")))
    infrastructure: list[ParkingInfrastructure] = []
    pages: list[ParkingPage] = []
    walls: list[Wall] = []
    for source, name, content in texts:
        if name == PARKING_FILE:
            found = parse_parking(source, content)
            infrastructure.extend(found.parking_infrastructure)
            pages.extend(found.parking_pages)
        else:
            walls.extend(parse_walls(source, content).walls)
    return Signatures(tuple(infrastructure), tuple(pages), tuple(walls))


def parse_parking(source: str, content: str) -> Signatures:
    """The [[infrastructure]] and [[page]] entries of a parking file."""
    data = _toml(source, content, allowed=("infrastructure", "page"))
    infrastructure = tuple(_entries(source, data, "infrastructure", _infrastructure))
    pages = tuple(_entries(source, data, "page", _parking_page))
    return Signatures(parking_infrastructure=infrastructure, parking_pages=pages)


def parse_walls(source: str, content: str) -> Signatures:
    """The [[wall]] entries of a walls file."""
    data = _toml(source, content, allowed=("wall",))
    return Signatures(walls=tuple(_entries(source, data, "wall", _wall)))


class _Entry:
    """One table of a file, read field by field; every problem names file, entry and field."""

    def __init__(self, source: str, table: str, index: int, data: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
        service = data.get("service")
        self._where = f"{source}: {table} #{index + 1}" + (f" ({service!r})" if isinstance(service, str) else "")
        self._data = data
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            raise self.error(unknown[0], f"unknown field (allowed: {', '.join(allowed)})")

    def error(self, field: str, problem: str) -> SignatureFileError:
        return SignatureFileError(f"{self._where}: {field}: {problem}")

    def text(self, field: str, *, empty: bool = False) -> str:
        value = self._data.get(field)
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise self.error(field, "missing, or not a non-empty string")
        return value.strip()

    def choice(self, field: str, kinds: type[ParkingKind]) -> ParkingKind:
        value = self.text(field)
        try:
            return kinds(value)
        except ValueError:
            raise self.error(field, f"{value!r} is not one of {', '.join(k.value for k in kinds)}") from None

    def strings(self, field: str, check: Callable[[str], str | None] | None = None) -> tuple[str, ...]:
        value = self._data.get(field, [])
        if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
            raise self.error(field, "must be a list of non-empty strings")
        for item in value:
            problem = check(item) if check else None
            if problem:
                raise self.error(field, f"{item!r}: {problem}")
        return tuple(item.strip() for item in value)

    def markers(self) -> PageMarkers:
        statuses = self._data.get("statuses", [])
        if not isinstance(statuses, list) or not all(
            isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599 for code in statuses
        ):
            raise self.error("statuses", "must be a list of HTTP status codes (100-599)")
        headers = self._data.get("headers", {})
        if not isinstance(headers, dict):
            raise self.error("headers", "must be a table of header name = text its value contains")
        pairs = []
        for name, value in headers.items():
            if not _HEADER_NAME.match(name.lower()) or not isinstance(value, str):
                raise self.error("headers", f"{name!r}: a header name, with a string value")
            pairs.append((name.lower(), value.lower()))
        title_any = self.strings("title_any", _marker_problem)
        text_all = self.strings("text_all", _marker_problem)
        if not (pairs or title_any or text_all):
            raise self.error("headers/title_any/text_all", "an entry needs at least one of them")
        return PageMarkers(frozenset(statuses), tuple(pairs), title_any, text_all)


def _infrastructure(entry: _Entry) -> ParkingInfrastructure:
    hosts = tuple(h.lower().rstrip(".") for h in entry.strings("hosts", _host_problem))
    landing = tuple(h.lower().rstrip(".") for h in entry.strings("landing_hosts", _host_problem))
    networks = tuple(ipaddress.ip_network(n) for n in entry.strings("networks", _network_problem))
    if not (hosts or networks or landing):
        raise entry.error("hosts/networks/landing_hosts", "an entry needs at least one of them")
    return ParkingInfrastructure(
        service=entry.text("service"), kind=entry.choice("kind", ParkingKind), source=entry.text("source"),
        hosts=hosts, networks=networks, landing_hosts=landing,
    )


def _parking_page(entry: _Entry) -> ParkingPage:
    return ParkingPage(
        service=entry.text("service", empty=True), kind=entry.choice("kind", ParkingKind),
        markers=entry.markers(), source=entry.text("source"),
    )


def _wall(entry: _Entry) -> Wall:
    return Wall(service=entry.text("service"), what=entry.text("what"), markers=entry.markers(),
                source=entry.text("source"))


_FIELDS = {
    "infrastructure": ("service", "kind", "source", "hosts", "networks", "landing_hosts"),
    "page": ("service", "kind", "source", *_MARKER_FIELDS),
    "wall": ("service", "what", "source", *_MARKER_FIELDS),
}


def _entries(source: str, data: Mapping[str, Any], table: str, build: Callable[[_Entry], Any]) -> list[Any]:
    rows = data.get(table, [])
    if not isinstance(rows, list):
        raise SignatureFileError(f"{source}: {table}: must be an array of tables ([[{table}]])")
    entries = []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise SignatureFileError(f"{source}: {table} #{index + 1}: must be a table")
        entries.append(build(_Entry(source, table, index, row, _FIELDS[table])))
    return entries


def _toml(source: str, content: str, *, allowed: tuple[str, ...]) -> dict[str, Any]:
    try:
        data = tomllib.loads(content)
    except tomllib.TOMLDecodeError as error:
        raise SignatureFileError(f"{source}: not valid TOML: {error}") from None
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise SignatureFileError(f"{source}: {unknown[0]}: unknown table (allowed: {', '.join(allowed)})")
    return data


def _host_problem(host: str) -> str | None:
    return None if _HOST.match(host.strip().lower().rstrip(".")) else "not a host name"


def _network_problem(network: str) -> str | None:
    try:
        ipaddress.ip_network(network.strip())
    except ValueError as error:
        return f"not a CIDR block ({error})"
    return None


def _marker_problem(marker: str) -> str | None:
    if not normalized(marker):
        return "empty once whitespace is ignored"
    for placeholder in _PLACEHOLDER.findall(marker):
        if placeholder != DOMAIN_PLACEHOLDER:
            return f"unknown placeholder {placeholder} (only {DOMAIN_PLACEHOLDER})"
    return None
