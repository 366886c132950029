"""Taking a company's host name out of a spreadsheet cell as people fill them: the first one, whatever surrounds it."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

from firmsift.domain.normalize import DomainRejected, normalize_domain

# Cells are split into words on whitespace and on characters that never occur in a host name
# and commonly separate several values: `thekrogerco.com kroger.com`, `a.com; b.com`, `<a.com>`.
_WORD_SEPARATORS = re.compile(r"[\s,;|<>\"'()\[\]{}]+")
# `https://`, `ftp:/`, and the common typo `http//` (a colon lost).
_SCHEME = re.compile(r"^(?:[a-z][a-z0-9+.\-]*:/{1,3}|(?:https?|ftp)/{2})", re.IGNORECASE)
_MAILTO = re.compile(r"^mailto:", re.IGNORECASE)
_PATH_START = re.compile(r"[/?#\\]")
_PORT = re.compile(r":\d*$")
_DOT = "[.\u3002\uff0e\uff61]"  # the dots IDNA accepts, as normalization does
# A word that reads as a host name: dotted labels ending in a top-level label of letters (or punycode).
# Numbers (`3.14`, `v2.0`), abbreviations (`J.P.`) and single words never match.
_HOST_WORD = re.compile(rf"^[^\W_][\w-]*(?:{_DOT}[\w-]+)*{_DOT}(?:[^\W\d_]{{2,63}}|xn--[a-z0-9-]+)$", re.IGNORECASE)
_IPV4 = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
# File names are not sites (`/default.aspx` is usually a path cut off by a space); none of these is
# a delegated top-level domain, so skipping them never hides a real host.
_FILE_EXTENSIONS = frozenset({"asp", "aspx", "cfm", "csv", "doc", "docx", "gif", "htm", "html", "jpeg", "jpg",
                              "jsp", "pdf", "php", "png", "pptx", "txt", "xls", "xlsx"})


class NoHostInCell(DomainRejected):
    """The cell holds no host name to classify (blank, words only, or only email addresses)."""


@dataclass(frozen=True)
class TakenHost:
    """The host name taken from a cell, as written there, and the further host names it also held (not used)."""

    host: str
    others: tuple[str, ...] = ()


@dataclass(frozen=True)
class CellDomain:
    """A cell's domain, normalized, and what was taken from the cell to make it."""

    domain: str
    taken: TakenHost


def take_host(cell: str) -> TakenHost:
    """The first host name in `cell`: from a URL (any scheme, with userinfo, port, path, query), or a bare
    host name, wherever it stands among other words. Email addresses (`info@acme.com`, `mailto:`) are
    skipped: a mail domain may be a mail provider's, not the company's. Raises NoHostInCell naming why."""
    text = _without_format_characters(cell)
    if not text.strip():
        raise NoHostInCell("blank cell")
    hosts: list[str] = []
    emails = 0
    for word in _WORD_SEPARATORS.split(text):
        kind, host = _read_word(word)
        if kind == "email":
            emails += 1
        elif host:
            hosts.append(host)
    if not hosts:
        if emails:
            raise NoHostInCell("holds an email address, not a website (an email's domain may be a mail "
                               "provider's, so it is not used)")
        raise NoHostInCell("no host name in the cell")
    return TakenHost(hosts[0], tuple(hosts[1:]))


def _without_format_characters(cell: str) -> str:
    """`cell` without zero-width spaces, BOMs and marks (Unicode category Cf). No ASCII character is
    one, so an ASCII cell (most of them) is returned as it is, not looked at character by character."""
    if cell.isascii():
        return cell
    return "".join(ch for ch in cell if unicodedata.category(ch) != "Cf")


def domain_from_cell(cell: str) -> CellDomain:
    """The normalized domain of the first host name in `cell`; DomainRejected (or NoHostInCell) says why not.
    Further host names that are this domain written again (`acme.com, www.acme.com`), or repeat each other,
    are dropped from `taken.others`: they are not a site left unused."""
    taken = take_host(cell)
    domain = normalize_domain(taken.host)
    others: dict[str, str] = {}
    for host in taken.others:
        others.setdefault(_normalized_or_as_written(host), host)
    others.pop(domain, None)
    return CellDomain(domain, replace(taken, others=tuple(others.values())))


def _normalized_or_as_written(host: str) -> str:
    try:
        return normalize_domain(host)
    except DomainRejected:
        return host


def _read_word(word: str) -> tuple[str, str | None]:
    """('email', None), ('host', host) or ('other', None) for one word of a cell."""
    if not word:
        return "other", None
    if _MAILTO.match(word):
        return "email", None
    scheme = _SCHEME.match(word)
    if scheme or word.startswith("//"):
        # Written as a URL: whatever stands in the host position is meant as the site, so it is
        # taken as it is and normalization judges it (an IP address is refused there, with its reason).
        rest = word[scheme.end():] if scheme else word.lstrip("/")
        host = _PORT.sub("", _PATH_START.split(rest, maxsplit=1)[0].rpartition("@")[2]).rstrip(".")
        return ("host", host) if host else ("other", None)
    if word.startswith("/"):
        return "other", None  # a path cut off from its host by a space: `acme.com /en-us /`
    head = _PATH_START.split(word, maxsplit=1)[0]
    if "@" in head:
        return "email", None
    host = _PORT.sub("", head).rstrip(".:!?*")
    if _IPV4.match(host):
        return "host", host
    if _HOST_WORD.match(host) and host.rsplit(".", 1)[-1].lower() not in _FILE_EXTENSIONS:
        return "host", host
    return "other", None
