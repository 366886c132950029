"""Reading a POST /batches JSON body as a stream (ijson): a first pass checks the whole document
and counts its `domains` entries, stopping at the batch's row limit; a second yields the entries
one at a time. Neither holds more than one entry: a body's memory is bounded by its largest entry,
not by its length."""

from __future__ import annotations

import math
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

import ijson

from firmsift.domain.batches import InputRow, max_rows, too_many_rows
from firmsift.entrypoints.http.contract.requests import BatchRequest
from firmsift.entrypoints.http.contract.validation import validated
from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.http.batch_body import ORIGINAL_JSON

READ_BYTES = 8192  # per read of the body: under 1 ms of parsing between two reads
MAX_DEPTH = 100  # levels of nesting a body may have: far more than any list of domains needs
# The C parser (yajl) is 20 times faster, but writes an unpaired surrogate escape as "?", refuses
# integers past 64 bits and says why in yajl's terms; the pure-Python one reads all as Python's json
# does. The fast one reads a body unless it may hold a surrogate escape or the fast one refused it.
_FAST = ijson.get_backend("yajl2_c") if "yajl2_c" in ijson.ALL_BACKENDS else ijson.get_backend("python")
_EXACT = ijson.get_backend("python")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SCAN_BYTES = 1 << 16
_CONSTANTS = {"N": "NaN", "I": "Infinity", "-": "-Infinity", "-I": "-Infinity"}  # the parser names only their first letter
_REFUSED_SYMBOL = re.compile(r"Unexpected symbol '([^']*)'")
_STARTS = ("start_map", "start_array")
_ENDS = ("end_map", "end_array")


@dataclass(frozen=True)
class JsonBatch:
    """The body's classifier and mode (None when left out), and how many entries `domains` has."""

    path: Path
    classifier: object
    mode: object
    entries: int
    backend: ModuleType

    def rows(self) -> Iterator[InputRow]:
        """Each entry of `domains` as a row: its JSON text as sent (re-encoded) and its value."""
        with self.path.open("rb") as body:
            for position, item in enumerate(self.backend.items(body, "domains.item", use_float=True)):
                yield InputRow(position, None, ORIGINAL_JSON(item), item)


def read_json_batch(path: Path, max_domains: int, max_chars: int) -> JsonBatch:
    """The body at `path` checked as BatchRequest without building it: 400 malformed_json (the
    rules of every JSON body: UTF-8, no NaN, Infinity or number out of range, no unpaired surrogate
    escape, at most MAX_DEPTH levels), 422 invalid_request, 413 too_many_domains as soon as
    `domains` holds more entries than a batch may have rows, or 413 row_too_large for a string of
    more than `max_chars` characters."""
    surrogates = _may_hold_surrogate_escape(path)
    try:
        batch = _first_pass(path, _FAST, max_domains, max_chars)  # the syntax is the C parser's: JSON's, strictly
        if not surrogates:
            return batch
    except (ijson.JSONError, ValueError) as error:
        # Past what the C parser can read, not past JSON: an integer of over 64 bits; a surrogate pair.
        if not ("integer overflow" in str(error) or (surrogates and isinstance(error, UnicodeDecodeError))):
            raise _not_json(path, error) from None
    # The pure-Python parser reads the values; where the C one stopped at a long integer, the syntax
    # after it too (a little more lax there: `+1` and `01` pass as numbers).
    try:
        return _first_pass(path, _EXACT, max_domains, max_chars)
    except (ijson.JSONError, ValueError) as error:
        raise _not_json(path, error) from None


def _first_pass(path: Path, backend: ModuleType, max_domains: int, max_chars: int) -> JsonBatch:
    fields: dict[str, Any] = {}
    document: object = None
    entries, depth, key, values = 0, 0, "", 0  # values: those begun at the top level
    limit = max_rows(max_domains)
    exact = backend is _EXACT
    try:
        with path.open("rb") as body:
            # The C parser passes over an unterminated string after the document in silence: it reads
            # the body followed by a second value of its own, which must then be the only other one.
            followed = _Followed(_Yielding(body))
            # basic_parse: events without their prefix, which is not read here (a quarter less CPU).
            events = (backend.basic_parse(_Yielding(body), buf_size=READ_BYTES, use_float=True) if exact else
                      backend.basic_parse(followed, buf_size=READ_BYTES, use_float=True, multiple_values=True))
            for event, value in events:
                if isinstance(value, str) and len(value) > max_chars:
                    raise BodyRejected(413, "row_too_large", f"a string of {len(value)} characters; at most "
                                                             f"{max_chars} (FIRMSIFT_MAX_ROW_CHARS)")
                if exact and isinstance(value, str):
                    value.encode("utf-8")  # UnicodeEncodeError for an unpaired surrogate
                elif isinstance(value, float) and math.isinf(value):  # yajl reads -1e400 as -inf
                    raise BodyRejected(400, "malformed_json", "request body is not valid JSON: a number is out of range")
                if depth == 0 and event not in _ENDS:
                    values += 1
                    if values > 1 and (exact or values > 2 or (event, value) != ("number", followed.value)):
                        raise ijson.JSONError("Additional data found")
                    document = _stand_in(event, value) if values == 1 else document
                elif depth == 1 and event == "map_key":
                    if value in fields:
                        raise BodyRejected(400, "malformed_json", f"request body names {value!r} twice")
                    key = value
                    fields[key] = None
                elif depth == 1 and event not in _ENDS:
                    fields[key] = _stand_in(event, value)
                elif depth == 2 and key == "domains" and event not in _ENDS and isinstance(fields[key], list):
                    entries += 1
                    if entries > limit:
                        raise too_many_rows(max_domains)
                if event in _STARTS:
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise BodyRejected(400, "malformed_json", "request body nests too deeply "
                                                                  f"(more than {MAX_DEPTH} levels)")
                elif event in _ENDS:
                    depth -= 1
    except UnicodeEncodeError:
        raise BodyRejected(400, "malformed_json", "request body contains an unpaired surrogate escape") from None
    if values < (1 if exact else 2):
        if exact:
            raise BodyRejected(400, "malformed_json", "request body is empty; send a JSON object")
        raise ijson.JSONError("the document or a string after it is unterminated")
    if isinstance(document, dict):
        document = fields
        if isinstance(fields.get("domains"), list):
            fields["domains"] = [None] * min(entries, 1)  # checked for being a non-empty list only
    request = validated(BatchRequest, document)
    return JsonBatch(path, request.classifier, request.mode, entries, backend)


class _Yielding:
    """A body file that lets other threads run before each read. The pass holds the GIL between
    reads: without this, the event loop waited up to the switch interval (5 ms) each time it needed
    the GIL back, a few dozen times per request, and /healthz took 265 ms beside five passes."""

    def __init__(self, body: BinaryIO) -> None:
        self._body = body

    def read(self, size: int = -1) -> bytes:
        time.sleep(0)  # releases the GIL: a thread waiting for it takes it now
        return self._body.read(size)


class _Followed:
    """A body file that reads as the body followed by a space and `value`."""

    def __init__(self, body: BinaryIO) -> None:
        self._body = body
        self.value = secrets.randbits(60)  # a number the body cannot know to write
        self._tail = f" {self.value}".encode()

    def read(self, size: int = -1) -> bytes:
        block = self._body.read(size)
        if not block and size:  # read(0) is how ijson asks whether a file gives bytes
            block, self._tail = self._tail, b""
        return block


def _stand_in(event: str, value: object) -> object:
    """A value as the check needs it: a scalar itself, an object or array only as its kind (empty)."""
    if event == "start_map":
        return {}
    return [] if event == "start_array" else value


def _may_hold_surrogate_escape(path: Path) -> bool:
    """Whether the body has a \\uD800-\\uDFFF escape (an emoji written as a pair, or a half of one)."""
    tail = b""
    with path.open("rb") as body:
        while block := body.read(_SCAN_BYTES):
            if _SURROGATE_ESCAPE.search(tail + block):
                return True
            tail = block[-5:]
    return False


def _not_json(path: Path, error: Exception) -> BodyRejected:
    """Why the body is not JSON, in json_body's words where the pure-Python parser refuses a constant
    Python's json would read (NaN, Infinity) or a number out of range; else in the parser's words."""
    try:
        with path.open("rb") as body:
            for _ in _EXACT.basic_parse(body, use_float=True):
                pass
    except (ijson.JSONError, ValueError) as exact:
        error = exact
    refused = _REFUSED_SYMBOL.match(str(error))
    constant = refused and _CONSTANTS.get(refused[1][:2] if refused[1].startswith("-") else refused[1][:1])
    if constant:
        why = f"{constant} is not valid JSON ({error})"
    elif (refused and any(ch.isdigit() for ch in refused[1])) or "overflow" in str(error):
        why = "a number is out of range"
    else:
        why = " ".join(str(error).split("\n")[0].split())[:200]  # yajl's spans lines, a caret under the place
    return BodyRejected(400, "malformed_json", f"request body is not valid JSON: {why}")
