"""Numbers in query parameters and form fields as hostile clients send them, on SQLite and
PostgreSQL: each is read within its range or refused with 400 bad_<name> before anything is
streamed, never a 500 or an answer cut short; a row index past the last row but within range is
an empty, well-formed answer."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from firmsift.entrypoints.wiring.container import Container
from tests.support.databases import SQL_BACKENDS
from tests.support.web_sessions import page_token

HUGE = "9" * 5000  # past the 4,300 digits Python's int() reads
PAST_64_BITS = "9999999999999999999"  # over 2**63 - 1: SQLite cannot bind it
LARGEST = str(2**63 - 1)
NOT_NUMBERS = ("-1", "1e3", "0x10", " 1", "", "\u0663")
ROWS = ["acme.com", "beta.org", "localhost"]  # the last one is rejected: a row all the same


@pytest.fixture(params=SQL_BACKENDS)
def served(request: pytest.FixtureRequest, make_container: Callable[..., Container],
           api_client: Callable[..., TestClient]) -> tuple[TestClient, str]:
    """The API (keys off, as `./dev serve` runs it) on a fresh database of the backend, and a batch of ROWS."""
    client = api_client(make_container(backend=request.param, precheck=False).api())
    accepted = client.post("/batches", json={"classifier": "cpg", "domains": ROWS})
    assert accepted.status_code == 202, accepted.text
    return client, accepted.json()["batch_id"]


def refused(response, code: str) -> None:  # noqa: ANN001
    assert response.status_code == 400, response.text[:300]
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == code
    assert len(response.text) < 400  # the value is not echoed back whole


def test_a_results_start_past_what_a_database_holds_is_a_400_not_a_cut_stream(served) -> None:  # noqa: ANN001
    client, batch_id = served
    for start in (PAST_64_BITS, str(2**63), HUGE, *NOT_NUMBERS):
        for wanted in ("jsonl", "csv"):
            refused(client.get(f"/batches/{batch_id}/results", params={"start": start, "format": wanted}), "bad_start")


def test_a_results_start_past_the_last_row_is_an_empty_answer(served) -> None:  # noqa: ANN001
    client, batch_id = served
    for start in (str(len(ROWS)), LARGEST, "0" * 30 + "3"):
        lines = client.get(f"/batches/{batch_id}/results?start={start}")
        assert (lines.status_code, lines.text) == (200, "")
        table = client.get(f"/batches/{batch_id}/results?start={start}&format=csv")
        assert table.status_code == 200 and len(list(csv.reader(io.StringIO(table.text)))) == 1  # the header only
    last = [json.loads(line) for line in client.get(f"/batches/{batch_id}/results?start=0002").text.splitlines()]
    assert [row["index"] for row in last] == [2]


def test_an_answers_limit_of_thousands_of_digits_is_a_400(served) -> None:  # noqa: ANN001
    client, _batch_id = served
    for limit in (HUGE, PAST_64_BITS, "1001", "0", *NOT_NUMBERS):
        for wanted in ("json", "csv"):
            refused(client.get("/answers", params={"limit": limit, "format": wanted}), "bad_limit")
    assert client.get("/answers?limit=1000").json() == {"answers": [], "next": None}


def test_the_web_apps_row_numbers_are_range_checked_too(served) -> None:  # noqa: ANN001
    client, batch_id = served
    for start in (PAST_64_BITS, HUGE, "-1"):
        page = client.get(f"/batch/{batch_id}", params={"start": start})
        assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
        assert "start must be a whole number from 0 to" in page.text
        refused(client.get(f"/batch/{batch_id}/rows", params={"start": start}), "bad_start")
    past_the_end = client.get(f"/batch/{batch_id}/rows?start={LARGEST}")
    assert past_the_end.status_code == 200 and "<tr" not in past_the_end.json()["rows_html"]
    assert client.get(f"/batch/{batch_id}?start={LARGEST}").status_code == 200

    token = page_token(client.get("/").text)
    form = {"csrf": token, "domain": "acme.com", "view": "batch", "answer": "no", "note": "a bank"}
    for index in (PAST_64_BITS, HUGE, "-1"):
        refused(client.post(f"/batch/{batch_id}/correct", data={**form, "index": index},
                            headers={"x-csrf-token": token}), "bad_index")
    assert client.get("/answers").json()["answers"] == []  # nothing was stored by a refused form
    corrected = client.post(f"/batch/{batch_id}/correct", data={**form, "index": LARGEST},
                            headers={"x-csrf-token": token})
    assert corrected.status_code == 200 and corrected.json()["row_html"] is None  # no such row to show again
