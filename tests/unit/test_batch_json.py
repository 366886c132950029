"""A POST /batches JSON body read as a stream: the same rows, fields and refusals as reading it whole
(json_body's rules), the row limit applied while counting, and memory bounded by one entry."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmsift.domain.batches import max_rows
from firmsift.domain.errors import InvalidRequest, TooManyDomains
from firmsift.entrypoints.http.batch_body import ORIGINAL_JSON
from firmsift.entrypoints.http.batch_json import MAX_DEPTH, read_json_batch
from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.http.json_body import json_document

MAX_DOMAINS = 1000
_scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text())
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                       max_leaves=12)


def _read(tmp_path: Path, body: bytes, max_domains: int = MAX_DOMAINS):
    path = tmp_path / "body"
    path.write_bytes(body)
    return read_json_batch(path, max_domains, 65536)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(domains=st.lists(_values, min_size=1, max_size=8), ascii_only=st.booleans(),
       extra=st.fixed_dictionaries({}, optional={"classifier": st.sampled_from(["cpg", "other"]),
                                                 "mode": st.sampled_from(["standard", "economy"])}))
def test_rows_are_those_of_the_whole_document(tmp_path: Path, domains: list[object], ascii_only: bool,
                                              extra: dict[str, str]) -> None:
    body = json.dumps({**extra, "domains": domains}, ensure_ascii=ascii_only).encode()
    whole = json_document(body)
    assert isinstance(whole, dict)
    batch = _read(tmp_path, body)
    assert (batch.classifier, batch.mode, batch.entries) == (whole.get("classifier", "cpg"), whole.get("mode"),
                                                             len(domains))
    rows = list(batch.rows())
    assert [row.original for row in rows] == [ORIGINAL_JSON(item) for item in whole["domains"]]
    assert [row.value for row in rows] == whole["domains"]
    assert [row.position for row in rows] == list(range(len(domains)))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet='{}[]",:0123456789.eE+-\\u nulltrefasNIdomains\ud800'.replace("\ud800", "") + "d8a",
                    max_size=40))
def test_what_the_whole_reading_refuses_the_stream_refuses(tmp_path: Path, text: str) -> None:
    body = text.encode()
    try:
        whole = json_document(body)
    except BodyRejected:
        with pytest.raises(BodyRejected) as refused:
            _read(tmp_path, body)
        assert refused.value.status == 400 and refused.value.code == "malformed_json"
        return
    try:
        _read(tmp_path, body)
    except BodyRejected as error:  # valid JSON refused only for what the stream adds: a name given twice
        assert error.code == "malformed_json" and "twice" in error.message, (whole, error)
    except InvalidRequest:
        pass  # valid JSON but no batch request (no object, no domains, ...): refused alike before


@pytest.mark.parametrize(("body", "why"), [
    (b'{"domains": ["a.com", NaN]}', "NaN is not valid JSON"),
    (b'{"domains": [Infinity]}', "Infinity is not valid JSON"),
    (b'{"domains": [-Infinity]}', "-Infinity is not valid JSON"),
    (b'{"domains": [1e999]}', "out of range"),
    (b'{"domains": [-1e999]}', "out of range"),
    (b'{"domains": [1' + b"0" * 5000 + b"]}", "out of range"),
    (b'{"domains": ["\\ud800.com"]}', "unpaired surrogate"),
    (b'{"domains": ["\\udc00\\ud83d"]}', "unpaired surrogate"),
    (b'{"domains": ["a\xff.com"]}', "can't decode"),
    (b'{"domains": ["a.com"]} []', "not valid JSON"),
    (b'{"domains": ["a"], "domains": ["b"]}', "names 'domains' twice"),
    (b'{"domains": ' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}", "nests too deeply"),
])
def test_refusals_say_why(tmp_path: Path, body: bytes, why: str) -> None:
    with pytest.raises(BodyRejected) as refused:
        _read(tmp_path, body)
    assert (refused.value.status, refused.value.code) == (400, "malformed_json")
    assert why in refused.value.message


def test_an_emoji_pair_and_a_big_integer_are_read_as_pythons_json_reads_them(tmp_path: Path) -> None:
    batch = _read(tmp_path, b'{"domains": ["\\ud83d\\ude00.com", 18446744073709551616]}')
    assert [row.value for row in batch.rows()] == ["\N{GRINNING FACE}.com", 18446744073709551616]


def test_counting_stops_at_the_row_limit_before_the_rest_is_read(tmp_path: Path) -> None:
    limit = max_rows(10)
    # Past the limit the body is not even JSON: only a reading that stops there answers 413.
    body = b'{"domains": [' + b"{}," * (limit + 1) + b" this is never read"
    with pytest.raises(TooManyDomains):
        _read(tmp_path, body, max_domains=10)
    assert _read(tmp_path, b'{"domains": [' + b",".join([b"{}"] * limit) + b"]}", max_domains=10).entries == limit


def _peak_bytes(tmp_path: Path, entries: int) -> int:
    body = b'{"domains": [' + b",".join([b'{"a": "b.com"}'] * entries) + b"]}"
    tracemalloc.start()
    try:
        batch = _read(tmp_path, body, max_domains=entries)
        assert sum(1 for _ in batch.rows()) == batch.entries == entries
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_bounded_by_an_entry_not_by_the_body(tmp_path: Path) -> None:
    list(_read(tmp_path, b'{"domains": [{"a": "b.com"}]}').rows())  # what is built once (the model's validator)
    small, large = _peak_bytes(tmp_path, 25_000), _peak_bytes(tmp_path, 200_000)  # 0.4 and 3 MB of body
    # Read whole, the larger body alone would be some 30 MB of objects; read as a stream, a few
    # parser buffers whatever its length.
    assert large < small + 100_000 and large < 4_000_000, (small, large)
