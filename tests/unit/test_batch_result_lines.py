"""Result lines of rows not yet answered, and of DONE rows written from the text a store kept:
each is what the general path writes, and a JSON list's stored original is spliced in as
re-encoding it would write it."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from firmsift.domain.batch_results import (
    NO_RESULT,
    RowResult,
    ShownResult,
    answer_fields,
    csv_line,
    csv_lines,
    json_line,
    json_lines,
    shown_members,
)
from firmsift.domain.batches import BATCH_CANCELLED, Batch, BatchRow

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
JSON_BATCH = Batch(id="b1", classifier="cpg", created_at=NOW, owner="key_a")
CSV_BATCH = Batch(id="b2", classifier="cpg", created_at=NOW, owner="key_a", columns=("Name", "Site"))
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)


def _original(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)  # as batch_body stores it


@given(domain=TEXT, job_id=TEXT, line=st.none() | st.integers(0, 10**6))
def test_a_pending_row_is_written_as_the_general_path_writes_it(domain: str, job_id: str, line: int | None) -> None:
    for batch, original in ((JSON_BATCH, _original(domain)), (CSV_BATCH, _original(["Acme", domain, "x"]))):
        row = BatchRow(5, line, original, domain, job_id)
        shared, copied = RowResult(row, "PENDING", NO_RESULT), RowResult(row, "PENDING", NO_RESULT._replace())
        assert json_line(batch, shared) == json_line(batch, copied)
        assert csv_line(batch, shared) == csv_line(batch, copied)


# Cells a spreadsheet would run, and cells escaped like them: the CSV path must make each inert.
FORMULA_TEXT = st.sampled_from(["=", "+", "-", "@", "\t", "\r", "'=", "''-", "'"]).flatmap(
    lambda start: TEXT.map(lambda rest: start + rest))
OPTIONAL_TEXT = st.none() | TEXT | FORMULA_TEXT
COUNT = st.none() | st.integers(-10**9, 10**9)  # negative too: "-1" is a formula's start
COST = st.none() | st.floats(min_value=0, allow_nan=False, allow_infinity=False)
DONE_RESULTS = st.builds(
    ShownResult, status=st.just("DONE"), answer=st.none() | st.booleans(), confidence=st.none() | st.integers(1, 5),
    reason=TEXT | FORMULA_TEXT, source=OPTIONAL_TEXT,
    evidence=st.lists(st.fixed_dictionaries({"url": TEXT | FORMULA_TEXT, "title": TEXT}), max_size=3),
    evidence_status=OPTIONAL_TEXT, search_provider=OPTIONAL_TEXT, evidence_reused_from=OPTIONAL_TEXT,
    evidence_searched_at=OPTIONAL_TEXT, quote=OPTIONAL_TEXT, quote_status=OPTIONAL_TEXT, site_status=OPTIONAL_TEXT,
    redirected_to=OPTIONAL_TEXT, redirected_answer=st.none() | st.booleans(), error=OPTIONAL_TEXT,
    tokens_in=COUNT, tokens_out=COUNT, cost_usd=COST, answer_tokens_in=COUNT, answer_tokens_out=COUNT,
    answer_cost_usd=COST)


@given(result=DONE_RESULTS, domain=TEXT, job_id=TEXT, line=st.none() | st.integers(0, 10**6))
def test_a_done_row_written_from_its_kept_text_is_what_the_general_path_writes(
        result: ShownResult, domain: str, job_id: str, line: int | None) -> None:
    for batch, original in ((JSON_BATCH, _original(domain)), (CSV_BATCH, _original(["Acme", domain]))):
        row = BatchRow(5, line, original, domain, job_id)
        kept, general = RowResult(row, "DONE", None, None, shown_members(result)), RowResult(row, "DONE", result)
        assert json_line(batch, kept) == json_line(batch, general)
        assert csv_line(batch, kept) == csv_line(batch, general)
        assert kept.result == result and kept == general


def test_a_kept_text_is_not_used_for_a_row_whose_state_is_not_done() -> None:
    # A DONE result in a row shown otherwise (not a state a store gives today): the general path.
    result = ShownResult(**{**NO_RESULT._asdict(), "status": "DONE", "answer": True})
    row = BatchRow(0, None, '"a.com"', "a.com", "job0")
    item = RowResult(row, "CANCELLED", None, BATCH_CANCELLED, shown_members(result))
    assert json.loads(json_line(JSON_BATCH, item))["status"] == "CANCELLED"
    assert json_line(JSON_BATCH, item) == json_line(JSON_BATCH, RowResult(row, "CANCELLED", result, BATCH_CANCELLED))


def test_a_pending_row_of_a_job_that_ended_shows_its_state_and_the_jobs_error() -> None:
    item = RowResult(BatchRow(0, None, '"a.com"', "a.com", "job0"), "CANCELLED", NO_RESULT, BATCH_CANCELLED)
    line = json.loads(json_line(JSON_BATCH, item))
    assert (line["status"], line["error"], line["job_id"]) == ("CANCELLED", BATCH_CANCELLED, "job0")


@given(value=JSON_VALUES, position=st.integers(0, 10**6))
def test_a_json_lists_item_is_written_as_re_encoding_it_would(value: object, position: int) -> None:
    for item in (RowResult(BatchRow(position, None, _original(value), rejection="no")),
                 RowResult(BatchRow(position, None, _original(value), "a.com", "job0"), "PENDING", NO_RESULT)):
        document: dict[str, Any] = {"index": position, "input": json.loads(item.row.original), **answer_fields(item)}
        assert json_line(JSON_BATCH, item) == json.dumps(document, ensure_ascii=False) + "\n"


def test_a_page_of_lines_is_each_line_in_order() -> None:
    items = [RowResult(BatchRow(0, 2, _original(["Acme", "acme.com"]), "acme.com", "job0"), "PENDING", NO_RESULT),
             RowResult(BatchRow(1, 3, _original(["Bad, Inc", "=x", "y"]), rejection="has 3 cells"))]
    assert csv_lines(CSV_BATCH, items) == "".join(csv_line(CSV_BATCH, item) for item in items)
    assert json_lines(CSV_BATCH, items) == "".join(json_line(CSV_BATCH, item) for item in items)
    assert [row[0] for row in csv.reader(io.StringIO(csv_lines(CSV_BATCH, items)))] == ["Acme", "Bad, Inc"]
