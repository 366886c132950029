"""Big messy company lists, as people export them from spreadsheets, with what each row must be
classified as: caller columns with quotes, delimiters and line breaks; website cells with spaces,
capitals, URLs, `www.`, trailing dots and internationalized names; blanks, garbage and repeats; rows
a cell short or a cell too wide."""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path

HEADER = ["id", "Company name", "website", "notes"]
NO_HOST = "no host name in the cell"
# Cells that hold no domain to classify, with (part of) the reason the output must give.
GARBAGE = {"localhost": NO_HOST, "1.2.3.4": "is an IP address", "not a domain": NO_HOST, "n/a": NO_HOST,
           "N/A": NO_HOST, "#REF!": NO_HOST, "=1+2": NO_HOST, "-bad-.com": NO_HOST, "a..b.com": NO_HOST,
           "x" * 70 + ".com": "longer than 63 characters", "http://": NO_HOST, "???": NO_HOST,
           "foo_bar.com": "characters other than letters", "http://[::1]/": NO_HOST, "com": NO_HOST,
           "info@firm1.com": "holds an email address", "mailto:sales@firm2.com": "holds an email address",
           "": "blank cell", "   ": "blank cell", "\t": "blank cell"}


# A row with a cell more than the header has (a delimiter typed into a cell) is rejected whatever its website.
WIDE_ROW = "cells but the header has"


@dataclass(frozen=True)
class ListRow:
    """One data row as written to the input (a cell short, or one too many, at times); the domain it
    must be classified as, or (part of) the reason it must be rejected with."""

    cells: list[str]
    domain: str | None
    reason: str | None = None

    @property
    def padded(self) -> list[str]:
        """The row's cells under the header, as the output must repeat them (a missing one empty)."""
        return (self.cells + [""] * len(HEADER))[:len(HEADER)]

    @property
    def extra(self) -> list[str]:
        """Cells past the header's, which the output must keep after its own columns."""
        return self.cells[len(HEADER):]


def company_host(number: int) -> str:
    """A company's host name as a person would write it: mostly ASCII, some internationalized."""
    kind = number % 10
    if kind == 7:
        return f"bücher-{number}.de"
    if kind == 8:
        return f"öko-{number}.at"
    if kind == 9:
        return f"пример-{number}.рф"
    return f"firm{number}.com"


def messy(host: str, rng: random.Random) -> str:
    """The host as a spreadsheet may hold it: spaces, capitals, a URL with a path, `www.`, a trailing dot."""
    return rng.choice([
        host, host.upper(), f"  {host}  ", f"https://www.{host}/about/team?ref=csv#top", f"http://{host.upper()}:8080/",
        f"{host}.", f"WWW.{host}", f"www.{host}/shop", f"Visit {host} today", f"{host}, {host}",
    ])


def messy_list(rows: int, seed: int) -> list[ListRow]:
    """`rows` rows: about 15% blank or garbage cells, 55% repeats of an earlier company (written
    another way), the rest new companies; caller columns with quotes, delimiters and line breaks."""
    rng = random.Random(seed)
    hosts: list[tuple[str, str]] = []  # each company's host name as written, and as IDNA ASCII
    listed: list[ListRow] = []
    for index in range(rows):
        draw = rng.random()
        domain: str | None
        reason = None
        if draw < 0.15:
            cell, domain = rng.choice(sorted(GARBAGE)), None
            reason = GARBAGE[cell]
        else:
            if hosts and draw < 0.7:
                host, domain = rng.choice(hosts)
            else:
                host = company_host(len(hosts))
                domain = host.encode("idna").decode("ascii")
                hosts.append((host, domain))
            cell = messy(host, rng)
        name = rng.choice([f"Firm {index}", f'Firm {index}, "The" Co.', f"Firm {index}\nLtd; Sàrl", f"Fïrm №{index}"])
        notes = rng.choice(["", "naïve ☃", "a,b;c|d", f"row {index}", "=SUM(A1:A2)"])
        cells = [str(index), name, cell, notes]
        shape = rng.random()
        if shape < 0.01:
            cells.pop()  # the trailing empty cells a spreadsheet leaves out
        elif shape < 0.02:
            cells.append("Ltd")
            domain, reason = None, WIDE_ROW
        listed.append(ListRow(cells, domain, reason))
    return listed


def write_list(path: Path, listed: list[ListRow]) -> None:
    """As Excel saves a UTF-8 CSV: a byte-order mark, commas, CRLF line ends."""
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(row.cells for row in listed)
