"""The classify client against a loopback stand-in of the API: rows kept in order with their columns,
a bounded window of rows and jobs, repeated domains asked once, refusals and stalls reported."""

from __future__ import annotations

import argparse
import csv
import io
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from firmsift.adapters.firmsift_api_client import HttpJobsApi
from firmsift.entrypoints.cli.classify_client import OrderedClassifier
from firmsift.entrypoints.cli.classify_command import run_classify
from firmsift.entrypoints.cli.classify_rows import CsvRowWriter, Row, answer_column_names, read_row
from firmsift.entrypoints.command_errors import CommandError
from firmsift.ports.jobs_api import ClientError
from tests.support.fake_api_server import FakeApi


def rows_of(cells: list[str]) -> list[Row]:
    return [read_row(line, ["name", cell], 2, 1) for line, cell in enumerate(cells, start=2)]


def classify(api: FakeApi, rows: list[Row] | Iterator[Row], header: list[str] | None = None, **options) -> tuple[
        list[list[str]], OrderedClassifier]:
    out = io.StringIO()
    with httpx.Client(base_url=api.base_url) as http:
        classifier = OrderedClassifier(HttpJobsApi(http, "cpg"), CsvRowWriter(out, header or ["name", "website"]),
                                       poll_interval=0.01, **{"batch_size": 3, **options})
        classifier.run(rows)
    return list(csv.reader(io.StringIO(out.getvalue()))), classifier


def test_every_row_comes_back_in_input_order_with_its_columns_and_answer() -> None:
    cells = ["www.kimberly-clark.com /en-us /", "", "Official website", "thekrogerco.com kroger.com",
             "https://citybank.com/", "failco.com", "KIMBERLY-CLARK.COM", "info@acme.com",
             "investors.axosfinancial.com /corporate-profile /default.aspx"]
    with FakeApi() as api:
        table, classifier = classify(api, rows_of(cells))
    header, *rows = table
    assert header == ["name", "website", *answer_column_names(["name", "website"])]
    assert [r[1] for r in rows] == cells  # order and the input cells, untouched
    by = {name: dict(zip(header, r)) for name, r in zip(cells, rows)}
    assert by["www.kimberly-clark.com /en-us /"]["classified_domain"] == "kimberly-clark.com"
    assert by["www.kimberly-clark.com /en-us /"]["answer"] == "true"
    assert by["https://citybank.com/"]["answer"] == "false"
    assert by["thekrogerco.com kroger.com"]["classified_domain"] == "thekrogerco.com"
    assert by["investors.axosfinancial.com /corporate-profile /default.aspx"]["status"] == "DONE"
    assert by[""]["status"] == "REJECTED" and by[""]["error"] == "blank cell"
    assert by["Official website"]["error"] == "no host name in the cell"
    assert "email" in by["info@acme.com"]["error"]
    assert by["failco.com"]["status"] == "FAILED" and by["failco.com"]["error"] == "the provider failed (scripted)"
    assert by["KIMBERLY-CLARK.COM"]["answer"] == "true"
    # kimberly-clark.com was asked once although two rows hold it.
    assert sum(domains.count("kimberly-clark.com") for domains in api.submitted) == 1
    tally = classifier.tally
    # and is paid for once: four answered domains at 0.001 USD, failco.com's cost unknown.
    assert (round(tally.cost_usd, 9), tally.cost_unknown) == (0.004, 1)
    assert (tally.answered, tally.failed, tally.rejected) == (5, 1, 3)


def test_only_a_bounded_window_of_rows_and_jobs_is_held() -> None:
    read = 0
    written: list[int] = []

    def source() -> Iterator[Row]:
        nonlocal read
        for n in range(700):
            read += 1
            yield read_row(n + 2, ["x", f"company{n}.com" if n % 7 else ""], 2, 1)

    class Counting(CsvRowWriter):
        def write(self, row: Row) -> None:
            written.append(read)
            super().write(row)
            assert read - len(written) <= 50  # rows read but not yet written

    with FakeApi() as api, httpx.Client(base_url=api.base_url) as http:
        OrderedClassifier(HttpJobsApi(http, "cpg"), Counting(io.StringIO(), ["name", "website"]), batch_size=5,
                          jobs_in_flight=4, rows_ahead=50, poll_interval=0.001).run(source())
        assert api.max_in_flight <= 4
    assert len(written) == 700


def test_a_domain_the_api_refuses_rejects_its_rows_and_the_rest_of_the_job_goes_on() -> None:
    with FakeApi() as api:
        api.refuse = {"refused.com"}
        table, classifier = classify(api, rows_of(["a.com", "refused.com", "b.com", "refused.com"]))
    statuses = [(r[1], r[3], r[table[0].index("error")]) for r in table[1:]]
    assert statuses == [("a.com", "DONE", ""), ("refused.com", "REJECTED", "refused by the API: refused (scripted)"),
                        ("b.com", "DONE", ""), ("refused.com", "REJECTED", "refused by the API: refused (scripted)")]


def test_a_job_that_never_finishes_stops_the_run_with_its_id() -> None:
    with FakeApi() as api:
        api.hold = {"stuck.com"}
        with pytest.raises(ClientError, match="nothing finished for 0s; jobs still running: job-1"):
            classify(api, rows_of(["stuck.com"]), stall_timeout=0.3)


def test_answer_columns_are_prefixed_when_the_input_has_one_of_their_names() -> None:
    assert answer_column_names(["Company", "Status", "website"])[:2] == ["firmsift_classified_domain",
                                                                         "firmsift_status"]
    assert answer_column_names(["status", "firmsift_status"])[1] == "firmsift2_status"
    assert answer_column_names(["domain", "website"])[1] == "status"
    with FakeApi() as api:
        table, _ = classify(api, [read_row(2, ["a.com", "mine"], 2, 0)], header=["website", "status"])
    assert table[0][:4] == ["website", "status", "firmsift_classified_domain", "firmsift_status"]
    assert table[1][:4] == ["a.com", "mine", "a.com", "DONE"]


def test_rows_shorter_than_the_header_are_padded_and_longer_ones_keep_their_cells() -> None:
    short = read_row(2, ["a.com"], 3, 0)
    assert short.cells == ["a.com", "", ""] and short.domain == "a.com"
    trailing_empty = read_row(3, ["a.com", "x", "y", "", ""], 3, 0)
    assert trailing_empty.domain == "a.com" and trailing_empty.extra == []
    spilled = read_row(4, ["a.com", "Acme", " Inc.", "z"], 3, 0)
    assert spilled.domain is None and "has 4 cells but the header has 3" in (spilled.error or "")
    with FakeApi() as api:
        table, _ = classify(api, [spilled], header=["website", "name", "notes"])
    assert table[1][:3] == ["a.com", "Acme", " Inc."] and table[1][-1] == "z"  # nothing lost


def test_a_batch_over_the_api_limit_names_the_batch_size_to_pass() -> None:
    with FakeApi(max_domains=2) as api:
        with pytest.raises(ClientError, match="the API takes at most 2 domains a job: pass --batch-size 2"):
            classify(api, rows_of(["a.com", "b.com", "c.com"]))


def _arguments(source, output, api: str, **overrides) -> argparse.Namespace:
    options = dict(domains=[], csv_file=source, column="website", encoding=None, delimiter=None, api=api,
                   api_key=None, classifier="cpg", batch_size=2, jobs_in_flight=10, format="csv", output=output,
                   timeout=0.5, poll_interval=0.01, retry_delay=0.01)
    return argparse.Namespace(**{**options, **overrides})


def test_a_run_that_cannot_finish_leaves_its_rows_in_a_part_file_never_the_output(tmp_path) -> None:
    source, output = tmp_path / "in.csv", tmp_path / "out.csv"
    source.write_text("name,website\nA,a.com\nB,b.com\nC,stuck.com\nD,d.com\n")
    with FakeApi() as api:
        api.hold = {"stuck.com"}
        with pytest.raises(CommandError) as stopped:
            run_classify(_arguments(source, output, api.base_url))
    assert not output.exists()
    part = tmp_path / "out.csv.part"
    assert [r[0] for r in csv.reader(part.open())] == ["name", "A", "B"]  # what finished, in order
    assert f"the rows finished so far are in {part}" in str(stopped.value)


def test_a_complete_run_exits_0_and_one_with_rejected_rows_exits_3(tmp_path, capsys) -> None:
    source, output = tmp_path / "in.csv", tmp_path / "out.csv"
    source.write_text("name,website\nA,a.com\n")
    with FakeApi() as api:
        assert run_classify(_arguments(source, output, api.base_url)) == 0
        source.write_text("name,website\nA,a.com\nB,\nC,failco.com\n")
        assert run_classify(_arguments(source, output, api.base_url)) == 3
    err = capsys.readouterr().err
    assert 'line 3: rejected "": blank cell' in err and "line 4: failed failco.com: the provider failed" in err
    assert f"{api.base_url} has no /batches (an older firmsift): classifying in jobs of 2 instead" in err
    assert "3 rows: 1 answered, 1 failed, 1 rejected; LLM cost 0.001 USD + 1 domain of unknown cost\n" in err
    assert not (tmp_path / "out.csv.part").exists() and len(output.read_text().splitlines()) == 4


CELLS = st.one_of(st.sampled_from(["", "  ", "Official website", "n/a", "info@acme.com", "https://www.citybank.com/",
                                   "failco.com", "thekrogerco.com kroger.com", "www.mars.com /en-us /"]),
                  st.from_regex(r"[a-d]\.(com|de)", fullmatch=True), st.text(max_size=12))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(CELLS, max_size=30), st.integers(1, 4), st.integers(1, 3), st.integers(1, 12))
def test_any_rows_come_back_once_each_in_order(cells: list[str], batch: int, jobs: int, ahead: int) -> None:
    with FakeApi() as api:
        table, classifier = classify(api, rows_of(cells), batch_size=batch, jobs_in_flight=jobs, rows_ahead=ahead)
    assert [r[1] for r in table[1:]] == cells
    for row in table[1:]:
        assert (row[3] == "REJECTED") == (row[2] == "") and row[3] in ("DONE", "FAILED", "REJECTED")
    assert classifier.tally.rows == len(cells)
    asked = [d for job in api.submitted for d in job]
    assert len(asked) == len(set(asked))  # each domain asked once in a run
