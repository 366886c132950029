"""Hostile batch bodies on the real app and a real SQLite file: a wide CSV header, a long row, a long
JSON string and a long pasted line are refused with 413 before they are held; a row is stored with
the cells it has (not padded to its header), and its result lines and web page are written in
pages whose size follows the batch's widest row."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
from pathlib import Path

import anyio
import pytest
from starlette.testclient import TestClient

from firmsift.domain.batch_results import rows_per_page
from firmsift.entrypoints.files.csv_stream import CsvReader, CsvRecordTooLong, detect_format
from firmsift.entrypoints.http.batch_body import SpooledBody
from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.web.submit import FormUpload
from firmsift.services.keys import create_key

MAX_COLUMNS = 50
MAX_ROW_CHARS = 2048


pytestmark = pytest.mark.container(auth="required", rate_limit_per_minute=0, max_csv_columns=MAX_COLUMNS,
                                   max_row_chars=MAX_ROW_CHARS)


@pytest.fixture
def key(container) -> dict[str, str]:
    issued = anyio.run(lambda: create_key("team", (), container.api_keys()))
    return {"authorization": f"Bearer {issued.secret}"}


def _csv(client: TestClient, key: dict[str, str], text: str, column: str = "c0"):
    return client.post(f"/batches?column={column}", content=text.encode(), headers={**key, "content-type": "text/csv"})


def test_a_header_wider_than_the_limit_is_413_and_stores_nothing(client: TestClient, container, key) -> None:
    header = ",".join(f"c{i}" for i in range(MAX_COLUMNS + 1))
    response = _csv(client, key, header + "\r\n" + "a.com\r\n" * 200)
    assert response.status_code == 413, response.text
    assert response.json()["error"]["code"] == "too_many_columns"
    assert "FIRMSIFT_MAX_CSV_COLUMNS" in response.json()["error"]["message"]
    assert anyio.run(lambda: container.batches().owned_batches("", 10)) == []


@pytest.mark.parametrize("row", [
    "x" * (MAX_ROW_CHARS + 10) + ",a.com",  # one long line
    '"' + "x\n" * MAX_ROW_CHARS + '",a.com',  # a quoted cell of many lines: one record
    ",".join(["a.com"] * MAX_ROW_CHARS),  # many short cells
])
def test_a_row_longer_than_the_limit_is_413_naming_its_line(client: TestClient, key, row: str) -> None:
    response = _csv(client, key, "c0,c1\r\nok.com,1\r\n" + row + "\r\n")
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "row_too_large" and "line 3" in error["message"], error


def test_a_header_longer_than_the_row_limit_is_413(client: TestClient, key) -> None:
    response = _csv(client, key, "c0," + "h" * (MAX_ROW_CHARS + 1) + "\r\na.com,1\r\n")
    assert (response.status_code, response.json()["error"]["code"]) == (413, "row_too_large")


def test_a_json_string_longer_than_the_limit_is_413(client: TestClient, key) -> None:
    response = client.post("/batches", json={"domains": ["a.com", "x" * (MAX_ROW_CHARS + 1)]}, headers=key)
    assert (response.status_code, response.json()["error"]["code"]) == (413, "row_too_large")


def test_rows_are_stored_with_their_cells_and_written_out_at_the_headers_width(client: TestClient, container,
                                                                               key) -> None:
    # The attack's shape at the limit: a wide header, rows of one cell. Stored padded, each row
    # was the header's width; stored as sent, each is one cell.
    header = ",".join(f"c{i}" for i in range(MAX_COLUMNS))
    response = _csv(client, key, header + "\r\n" + "".join(f"d{i}.com\r\n" for i in range(200)))
    assert response.status_code == 202, response.text
    batch_id = response.json()["batch_id"]
    assert anyio.run(lambda: container.batches().widest_row(batch_id)) == len('["d100.com"]')
    page = anyio.run(lambda: container.batches().result_page(batch_id, after=-1, limit=1))
    assert json.loads(page[0].row.original) == ["d0.com"]

    lines = client.get(f"/batches/{batch_id}/results?format=jsonl", headers=key).text.splitlines()
    first = json.loads(lines[0])
    assert len(lines) == 200 and first["input"] == {"c0": "d0.com", **{f"c{i}": "" for i in range(1, MAX_COLUMNS)}}
    records = list(csv.reader(io.StringIO(client.get(f"/batches/{batch_id}/results?format=csv", headers=key).text)))
    assert len(records) == 201 and {len(record) for record in records} == {len(records[0])}
    assert records[1][:2] == ["d0.com", ""] and records[1][MAX_COLUMNS] == "d0.com"  # then classified_domain


def test_a_row_wider_than_its_header_keeps_every_cell_and_trailing_empty_cells_are_dropped(
        client: TestClient, container, key) -> None:
    response = _csv(client, key, "c0,c1\r\na.com,1,,\r\nb.com,2,oops\r\n")
    assert response.status_code == 202, response.text
    assert [r["index"] for r in response.json()["rejected"]] == [1]
    page = anyio.run(lambda: container.batches().result_page(response.json()["batch_id"], after=-1, limit=2))
    assert [json.loads(item.row.original) for item in page] == [["a.com", "1"], ["b.com", "2", "oops"]]


def test_a_page_holds_fewer_rows_the_wider_the_batchs_rows(
        client: TestClient, container, key) -> None:
    wide = ",".join(f"column_with_a_long_name_{i}" for i in range(MAX_COLUMNS))
    response = _csv(client, key, wide + "\r\n" + ("a.com," + "y" * 1900 + "\r\n") * 3, column="column_with_a_long_name_0")
    batch = anyio.run(lambda: container.batches().get_batch(response.json()["batch_id"]))
    widest = anyio.run(lambda: container.batches().widest_row(batch.id))
    assert rows_per_page(batch, widest, 5000, page_chars=100_000) == 100_000 // (widest + sum(
        len(name) + 6 for name in batch.columns) + 1000)
    assert rows_per_page(batch, 10**9, 5000) == 1


def test_a_pasted_line_longer_than_the_limit_is_413_and_the_lines_before_it_are_read_one_by_one(
        tmp_path: Path, container) -> None:
    path = tmp_path / "pasted.txt"
    path.write_text("a.com\n\n  b.com  \n" + "z" * (MAX_ROW_CHARS + 1) + "\n")
    upload = FormUpload(SpooledBody(path, ""), {"kind": "list"}, container.settings())
    rows = upload.rows()
    assert [next(rows).value, next(rows).value] == ["a.com", "b.com"]
    with pytest.raises(BodyRejected) as refused:
        next(rows)
    assert (refused.value.status, refused.value.code) == (413, "row_too_large") and "line 4" in refused.value.message


def test_the_reader_never_holds_a_record_past_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_text("c0,c1\r\n" + "x" * 20_000_000 + "\r\n")  # 20 MB on one line
    with CsvReader(path, detect_format(path), max_record_chars=1000) as reader:
        tracemalloc.start()
        try:
            with pytest.raises(CsvRecordTooLong):
                next(iter(reader))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 1_000_000, peak
