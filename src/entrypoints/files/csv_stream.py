"""Streaming the CSV files people export (UTF-8 with or without BOM, UTF-16 from Excel, `;` or tab
delimiters, quoted newlines): row by row in, row by row out, never the whole file in memory."""

from __future__ import annotations

import codecs
import csv
import io
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from firmsift.entrypoints.files.csv_files import CsvFileError

SAMPLE_BYTES = 64 * 1024
DELIMITERS = (",", ";", "\t", "|")
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_SAMPLE_RECORDS = 50


@dataclass(frozen=True)
class CsvFormat:
    """How a file is written: the codec that reads it, its delimiter, and whether it began with a BOM."""

    encoding: str
    delimiter: str
    bom: bool


def detect_format(path: Path, encoding: str | None = None, delimiter: str | None = None) -> CsvFormat:
    """The file's encoding (from its byte-order mark; UTF-16 without one from its zero bytes; else UTF-8)
    and delimiter (the one of `, ; TAB |` that splits the first records into the same number of
    cells, more than one), each unless given."""
    head = _read_head(path)
    bom = any(head.startswith(mark) for mark, _ in _BOMS)
    codec = encoding or _encoding_of(head)
    try:
        codecs.lookup(codec)
    except LookupError:
        raise CsvFileError(f"unknown encoding {codec!r} (for example: utf-8, utf-16, cp1252, latin-1)") from None
    if delimiter is not None and len(delimiter) != 1:
        raise CsvFileError(f"the delimiter must be one character, not {delimiter!r}")
    sample = codecs.getincrementaldecoder(codec)(errors="replace").decode(head, final=len(head) < SAMPLE_BYTES)
    return CsvFormat(codec, delimiter or _sniff_delimiter(sample, complete=len(head) < SAMPLE_BYTES), bom)


def _read_head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(SAMPLE_BYTES)
    except FileNotFoundError:
        raise CsvFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CsvFileError(f"{path}: is a folder, not a CSV file") from None
    except OSError as error:
        raise CsvFileError(f"{path}: cannot read: {error.strerror}") from None


def _encoding_of(head: bytes) -> str:
    for mark, codec in _BOMS:
        if head.startswith(mark):
            return codec
    even, odd = head[0:1000:2], head[1:1000:2]
    if even.count(0) > len(even) // 3 and not odd.count(0):
        return "utf-16-be"  # ASCII text as UTF-16 without a BOM: every other byte is zero
    if odd.count(0) > len(odd) // 3 and not even.count(0):
        return "utf-16-le"
    return "utf-8"


def _sniff_delimiter(sample: str, *, complete: bool) -> str:
    best, best_score = ",", (0, 0)
    for candidate in DELIMITERS:
        try:
            records = [r for r in csv.reader(io.StringIO(sample, newline=""), delimiter=candidate) if r]
        except csv.Error:
            continue
        if not complete:
            records = records[:-1]  # the sample may end inside the last record
        records = records[:_SAMPLE_RECORDS]
        if not records or len(records[0]) < 2:
            continue
        width = len(records[0])
        score = (sum(len(r) == width for r in records), width)
        if score > best_score:
            best, best_score = candidate, score
    return best


class CsvRecordTooLong(CsvFileError):
    """A record (the header included) longer than the reader allows: refused before it is held whole."""


class _BoundedLines:
    """The file's lines for csv.reader, refusing a record once its lines pass `limit` characters
    (read at most limit + 1 at a time, so no longer line is ever held)."""

    def __init__(self, handle: TextIO, limit: int) -> None:
        self._handle = handle
        self._limit = limit
        self.record_chars = 0  # of the record being read; the reader sets it to 0 at each record

    def __iter__(self) -> _BoundedLines:
        return self

    def __next__(self) -> str:
        room = self._limit - self.record_chars
        line = self._handle.readline(room + 1)
        if not line:
            raise StopIteration
        self.record_chars += len(line)
        if len(line) > room:
            raise CsvRecordTooLong(f"a row longer than {self._limit} characters")
        return line


class CsvReader:
    """The header and then each record with the line it starts on, read as the file is consumed;
    with `max_record_chars`, CsvRecordTooLong for a longer record, before it is held."""

    def __init__(self, path: Path, fmt: CsvFormat, max_record_chars: int | None = None) -> None:
        self.path = path
        self.format = fmt
        self._handle: TextIO = path.open(encoding=fmt.encoding, newline="")
        self._lines = _BoundedLines(self._handle, max_record_chars) if max_record_chars else None
        self._reader = csv.reader(self._lines or self._handle, delimiter=fmt.delimiter)
        try:
            header = self._next()
        except CsvFileError:
            self.close()
            raise
        if header is None:
            self.close()
            raise CsvFileError(f"{path}: is empty (no header row)")
        self.header: list[str] = header[1]

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        while (record := self._next()) is not None:
            yield record

    def _next(self) -> tuple[int, list[str]] | None:
        line = self._reader.line_num + 1
        if self._lines is not None:
            self._lines.record_chars = 0
        try:
            return line, next(self._reader)
        except StopIteration:
            return None
        except CsvRecordTooLong as error:
            raise CsvRecordTooLong(f"{self.path}: line {line}: {error}") from None
        except UnicodeDecodeError:
            line = _first_undecodable_line(self.path, self.format.encoding)
            raise CsvFileError(f"{self.path}: line {line}: not {self.format.encoding} text; name the file's encoding "
                               "with --encoding (Excel on Windows often writes cp1252)") from None
        except csv.Error as error:
            raise CsvFileError(f"{self.path}: line {line}: not readable as CSV: {error}") from None

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> CsvReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_undecodable_line(path: Path, encoding: str) -> int:
    """The line (as an editor counts them) of the first bytes `encoding` cannot read: the reader decodes
    ahead in blocks, so its own line count does not say where."""
    decoder = codecs.getincrementaldecoder(encoding)()
    line = 1
    with path.open("rb") as handle:
        while chunk := handle.read(SAMPLE_BYTES):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as error:
                return line + chunk[: max(error.start, 0)].count(b"\n")
            line += chunk.count(b"\n")
    return line


# The domain column when none is named: `classify`, its estimate and the web app guess alike.
COLUMN_GUESSES = ("domain", "website", "web site", "url", "homepage", "site")


def find_column(header: Sequence[str], wanted: str | None, guesses: Sequence[str]) -> int:
    """The index of column `wanted` (exact, else ignoring case, spaces and invisible marks), or, when
    None, of the first of `guesses` present, else of the one column whose name holds a guess as a word.
    CsvFileError names the columns found otherwise."""
    keys = [_key(name) for name in header]
    if wanted is not None:
        if wanted in header:
            return list(header).index(wanted)
        matches = [i for i, key in enumerate(keys) if key == _key(wanted)]
        if len(matches) == 1:
            return matches[0]
        problem = f"{len(matches)} columns named {wanted!r}" if matches else f"no column {wanted!r}"
    else:
        for guess in guesses:
            if _key(guess) in keys:
                return keys.index(_key(guess))
        # `Official website`, `Company URL`: the one column whose name holds a guess as a word.
        holding = [i for i, key in enumerate(keys) if any(f" {_key(g)} " in f" {key} " for g in guesses)]
        if len(holding) == 1:
            return holding[0]
        problem = (f"{len(holding)} columns could hold the domains: name one with --column" if holding else
                   f"no column named {' or '.join(repr(g) for g in guesses)}: name it with --column")
    found = ", ".join(repr(name) for name in header) or "nothing"
    raise CsvFileError(f"{problem} (found: {found})")


def _key(name: str) -> str:
    visible = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
    return " ".join(visible.split()).casefold()

