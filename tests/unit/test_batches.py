"""Batch rules: planning rows into jobs (dedupe, rejections, input order, chunks on job
boundaries), progress and its estimate, and the result lines."""

from __future__ import annotations

import csv
import io
import itertools
import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.domain.batch_documents import batch_status, estimated_finish, finished_at, progress_document
from firmsift.domain.batch_results import RowResult, answer_names, csv_header, csv_line, json_line, shown_result
from firmsift.domain.batches import (
    BATCH_CANCELLED,
    Batch,
    BatchCounts,
    BatchPlan,
    BatchRow,
    BatchStatus,
    InputRow,
    domain_state,
)
from firmsift.domain.errors import InvalidRequest, TooManyDomains
from firmsift.domain.model import DomainResult, JobStatus, ResultStatus, Source
from firmsift.domain.normalize import DomainRejected, normalize_domain
from firmsift.domain.spend import Spend

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
BATCH = Batch(id="b1", classifier="cpg", created_at=NOW, owner="key_a")


def plan(values: list[object], *, job_size: int = 2, max_domains: int = 100, rows_per_chunk: int = 3) -> BatchPlan:
    ids = (f"job{i}" for i in itertools.count())
    rows = [InputRow(i, None, json.dumps(v), v) for i, v in enumerate(values)]
    return BatchPlan(BATCH, rows, read_domain=normalize_domain, job_size=job_size, max_domains=max_domains,
                     new_job_id=lambda: next(ids), rows_per_chunk=rows_per_chunk)


def test_rows_are_deduplicated_rejected_and_kept_in_order() -> None:
    planned = plan(["a.com", "www.A.com", "b.com", "", "c.com", "b.com"])
    chunks = list(planned.chunks())
    rows = [row for chunk in chunks for row in chunk.rows]
    assert [(r.position, r.domain, r.job_id, r.rejection) for r in rows] == [
        (0, "a.com", "job0", None), (1, "a.com", "job0", None), (2, "b.com", "job0", None),
        (3, None, None, "empty"), (4, "c.com", "job1", None), (5, "b.com", "job0", None)]
    assert [job.domains for chunk in chunks for job in chunk.jobs] == [("a.com", "b.com"), ("c.com",)]
    counted = planned.batch()
    assert (counted.total, counted.accepted, counted.duplicates, counted.rejected) == (6, 3, 2, 1)
    assert planned.job_ids == ["job0", "job1"]


def test_a_chunk_ends_where_a_job_does_so_no_row_points_at_an_unwritten_job() -> None:
    chunks = list(plan([f"d{i}.com" for i in range(7)], job_size=2, rows_per_chunk=3).chunks())
    assert [len(c.rows) for c in chunks] == [4, 3]
    written: set[str] = set()
    for chunk in chunks:
        written |= {job.id for job in chunk.jobs}
        assert {row.job_id for row in chunk.rows} <= written


def test_jobs_carry_the_batch_owner_and_no_reply_queue() -> None:
    [chunk] = plan(["a.com"]).chunks()
    [job] = chunk.jobs
    assert (job.owner, job.reply_queue, job.status, job.classifier) == ("key_a", None, JobStatus.PENDING, "cpg")


def test_more_unique_domains_than_allowed_is_refused_naming_the_row() -> None:
    with pytest.raises(TooManyDomains, match=r"more than 2 unique domains .*row 4"):
        list(plan(["a.com", "a.com", "b.com", "c.com"], max_domains=2).chunks())


def test_more_rows_than_ten_per_allowed_domain_is_refused() -> None:
    with pytest.raises(TooManyDomains, match="more than 20 rows"):
        list(plan(["a.com"] * 21, max_domains=2).chunks())
    assert sum(len(chunk.rows) for chunk in plan(["a.com"] * 20, max_domains=2).chunks()) == 20


def test_a_list_without_rows_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="no rows"):
        list(plan([]).chunks())


def test_a_row_refused_as_read_keeps_its_reason() -> None:
    rows = [InputRow(0, 2, "[]", DomainRejected("has 3 cells but the header has 2"))]
    planned = BatchPlan(BATCH, rows, read_domain=normalize_domain, job_size=2, max_domains=5, new_job_id=lambda: "j")
    [chunk] = planned.chunks()
    assert chunk.rows[0].rejection == "has 3 cells but the header has 2" and chunk.rows[0].line == 2


@given(st.lists(st.sampled_from(["a.com", "A.com", "b.org", "x y", "c.net", "localhost", "d.io", "e.de", 3]),
                min_size=1, max_size=40), st.integers(1, 4), st.integers(1, 5))
def test_every_row_is_accounted_for_once_in_order(values: list[object], job_size: int, per_chunk: int) -> None:
    planned = plan(values, job_size=job_size, rows_per_chunk=per_chunk)
    chunks = list(planned.chunks())
    rows = [row for chunk in chunks for row in chunk.rows]
    jobs = [job for chunk in chunks for job in chunk.jobs]
    assert [row.position for row in rows] == list(range(len(values)))
    assert all(len(job.domains) <= job_size for job in jobs)
    in_jobs = [d for job in jobs for d in job.domains]
    assert len(in_jobs) == len(set(in_jobs)) == planned.batch().accepted
    job_of = {d: job.id for job in jobs for d in job.domains}
    assert all(row.job_id == job_of[row.domain] for row in rows if row.domain is not None)
    counted = planned.batch()
    assert counted.accepted + counted.duplicates + counted.rejected == counted.total == len(values)
    # A chunk stays bounded whatever its rows are (a list of rejected rows is no one chunk), and
    # each of its rows' jobs is written in it or before it.
    written: set[str] = set()
    for chunk in chunks:
        assert len(chunk.rows) <= 2 * per_chunk + job_size
        written |= {job.id for job in chunk.jobs}
        assert {row.job_id for row in chunk.rows if row.job_id is not None} <= written


def test_a_domain_state_follows_its_result_then_its_job() -> None:
    assert domain_state("DONE", JobStatus.FAILED, BATCH_CANCELLED) == "DONE"
    assert domain_state("PENDING", JobStatus.RUNNING, None) == "PENDING"
    assert domain_state("PENDING", JobStatus.FAILED, BATCH_CANCELLED) == "CANCELLED"
    assert domain_state("PENDING", JobStatus.FAILED, "dead-lettered") == "FAILED"


def test_progress_estimates_the_finish_from_the_rate_so_far() -> None:
    now = NOW + timedelta(seconds=100)
    half = BatchCounts(done=40, failed=10, pending=50)
    assert estimated_finish(BATCH, half, now) == now + timedelta(seconds=100)
    assert estimated_finish(BATCH, BatchCounts(pending=50), now) is None  # no rate yet
    assert estimated_finish(BATCH, BatchCounts(done=50), now) is None  # nothing left
    assert batch_status(BATCH, half) is BatchStatus.RUNNING and finished_at(BATCH, half) is None
    ended = BatchCounts(done=50, last_finished_at=NOW + timedelta(seconds=90))
    assert batch_status(BATCH, ended) is BatchStatus.DONE and finished_at(BATCH, ended) == NOW + timedelta(seconds=90)
    cancelled = Batch(id="b1", classifier="cpg", created_at=NOW, cancelled_at=NOW + timedelta(seconds=95))
    assert batch_status(cancelled, half) is BatchStatus.CANCELLED
    assert finished_at(cancelled, BatchCounts(done=5, last_finished_at=NOW)) == NOW + timedelta(seconds=95)
    document = progress_document(BATCH, BatchCounts(done=1, pending=1, by_source={"llm": 1, "cache": 0}), now)
    assert document["estimated_finish_at"] == (now + timedelta(seconds=100)).isoformat()
    assert list(document["by_source"]) == ["cache", "llm"]
    assert document["spend"] == {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "cost_unknown_domains": 0}
    spent = progress_document(BATCH, BatchCounts(done=2, spend=Spend(1900, 180, 0.3, 1)), now)["spend"]
    assert spent == {"tokens_in": 1900, "tokens_out": 180, "cost_usd": 0.3, "cost_unknown_domains": 1}


CSV_BATCH = Batch(id="b1", classifier="cpg", created_at=NOW, columns=("Name", "Status"))
ANSWERED = DomainResult(domain="a.com", status=ResultStatus.DONE, answer=True, confidence=4, reason="=HYPERLINK()",
                        source=Source.LLM)


def test_result_lines_keep_the_callers_values_and_make_answer_cells_inert() -> None:
    row = BatchRow(0, 2, json.dumps(["=1+1", "a.com"]), "a.com", "job0")
    header = next(csv.reader(io.StringIO(csv_header(CSV_BATCH, answer_names()))))
    assert header[:4] == ["Name", "Status", "firmsift_classified_domain", "firmsift_status"]  # no input shadowed
    cells = next(csv.reader(io.StringIO(csv_line(CSV_BATCH, RowResult(row, "DONE", shown_result(ANSWERED))))))
    assert cells[0] == "=1+1" and cells[header.index("firmsift_reason")] == "'=HYPERLINK()"
    assert cells[header.index("firmsift_answer")] == "true"
    line = json.loads(json_line(CSV_BATCH, RowResult(row, "DONE", shown_result(ANSWERED))))
    assert line["input"] == {"Name": "=1+1", "Status": "a.com"} and line["reason"] == "=HYPERLINK()"
    assert (line["index"], line["line"], line["classified_domain"]) == (0, 2, "a.com")


def test_cells_past_the_headers_width_are_kept_after_the_answer() -> None:
    row = BatchRow(4, 6, json.dumps(["Acme", "acme.com", "x", "y"]), rejection="has 4 cells but the header has 2")
    line = json.loads(json_line(CSV_BATCH, RowResult(row)))
    assert line["input"] == {"Name": "Acme", "Status": "acme.com"} and line["extra_cells"] == ["x", "y"]
    cells = next(csv.reader(io.StringIO(csv_line(CSV_BATCH, RowResult(row)))))
    assert cells[:2] == ["Acme", "acme.com"] and cells[-2:] == ["x", "y"]
    assert len(cells) == 2 + len(answer_names()) + 2


def test_rejected_cancelled_and_dead_lettered_rows_say_why() -> None:
    rejected = json.loads(json_line(BATCH, RowResult(BatchRow(3, None, "7", rejection="must be a string, not int"))))
    assert (rejected["input"], rejected["status"], rejected["error"], rejected["classified_domain"]) == (
        7, "REJECTED", "must be a string, not int", None)
    row = BatchRow(1, None, '"a.com"', "a.com", "job0")
    cancelled_row = RowResult(row, "CANCELLED", shown_result(DomainResult("a.com")), BATCH_CANCELLED)
    cancelled = json.loads(json_line(BATCH, cancelled_row))
    assert (cancelled["status"], cancelled["error"]) == ("CANCELLED", BATCH_CANCELLED)
    header = csv_header(BATCH, answer_names())
    assert header.startswith("input,classified_domain,status,")
    assert csv_line(BATCH, RowResult(BatchRow(3, None, "7", rejection="bad"))).startswith("7,,REJECTED,")
