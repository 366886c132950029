"""One behaviour suite for the batch store, run against the in-memory store, SQLite and PostgreSQL:
rows kept in input order with their originals, all-or-nothing recording, Idempotency-Key, progress
counts, paged results, cancelling by compare-and-set, and the database-queue intake's messages."""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, text

from firmsift.adapters.sql.batch_intake import SqlBatchIntake
from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.batch_results import NO_RESULT, json_line, shown_result
from firmsift.domain.batches import Batch, BatchKeyTaken, BatchPlan, InputRow
from firmsift.domain.errors import TooManyDomains
from firmsift.domain.model import Answer, DomainResult, Evidence, JobStatus, QuoteStatus, ResultStatus, Source
from firmsift.domain.normalize import normalize_domain
from firmsift.domain.spend import Spend, total_spend
from firmsift.ports.infrastructure_errors import DatabaseFailure

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


def plan(values: list[object], *, batch_id: str = "b1", owner: str = "key_a", key: str | None = None,
         max_domains: int = 100, job_size: int = 2) -> BatchPlan:
    ids = (f"{batch_id}-job{i}" for i in itertools.count())
    batch = Batch(id=batch_id, classifier="cpg", created_at=NOW, owner=owner, idempotency_key=key,
                  request_hash=f"hash-{batch_id}")
    rows = (InputRow(i, None, json.dumps(v), v) for i, v in enumerate(values))
    return BatchPlan(batch, rows, read_domain=normalize_domain, job_size=job_size, max_domains=max_domains,
                     new_job_id=lambda: next(ids), rows_per_chunk=2)


VALUES = ["a.com", "B.com", "bad domain", "https://www.a.com/x", "c.com", 7]


async def test_a_batch_keeps_every_row_in_order_with_its_original(batches) -> None:
    recorded = await batches.record(plan(VALUES))
    assert (recorded.total, recorded.accepted, recorded.duplicates, recorded.rejected) == (6, 3, 1, 2)
    stored = await batches.get_batch("b1")
    assert stored == recorded and stored.request_hash == "hash-b1" and stored.columns is None
    page = await batches.result_page("b1", after=-1, limit=4)
    assert [json.loads(r.row.original) for r in page] == VALUES[:4]
    assert [r.state for r in page] == ["PENDING", "PENDING", None, "PENDING"]
    assert page[3].row.job_id == page[0].row.job_id == "b1-job0" and page[3].row.domain == "a.com"
    rest = await batches.result_page("b1", after=page[-1].row.position, limit=4)
    assert [r.row.position for r in rest] == [4, 5]
    assert [(r.position, r.rejection) for r in await batches.rejected_rows("b1", limit=10)] == [
        (2, "contains whitespace or backslashes"), (5, "must be a string, not int")]
    assert [r.position for r in await batches.rejected_rows("b1", limit=1)] == [2]
    counts = await batches.counts("b1")
    assert (counts.pending, counts.done, counts.failed, counts.cancelled) == (3, 0, 0, 0)


async def test_a_plan_that_fails_records_nothing(batches) -> None:
    with pytest.raises(TooManyDomains):
        await batches.record(plan(VALUES, max_domains=2))
    assert await batches.get_batch("b1") is None
    assert await batches.batch_of_job("b1-job0") is None


async def test_a_used_idempotency_key_returns_the_earlier_batch_and_writes_nothing(batches) -> None:
    await batches.record(plan(["a.com"], key="k1"))
    with pytest.raises(BatchKeyTaken) as taken:
        await batches.record(plan(["b.com"], batch_id="b2", key="k1"))
    assert taken.value.existing.id == "b1"
    assert await batches.get_batch("b2") is None
    await batches.record(plan(["b.com"], batch_id="b3", owner="key_b", key="k1"))  # keys are per owner
    assert (await batches.get_batch("b3")) is not None


async def test_progress_counts_domains_by_state_and_source(batches) -> None:
    await batches.record(plan(VALUES))
    jobs = batches.store
    answer = Answer(domain="a.com", classifier="cpg", status=ResultStatus.DONE, answered_at=NOW, source=Source.LLM,
                    answer=True, confidence=5)
    await jobs.set_job_status("b1-job0", JobStatus.RUNNING)
    await jobs.save_result("b1-job0", DomainResult.from_answer(answer, Source.LLM), answer)
    await jobs.save_result("b1-job0", DomainResult(domain="b.com", status=ResultStatus.FAILED, source=Source.LLM,
                                                   error="unreadable"), None)
    counts = await batches.counts("b1")
    assert (counts.done, counts.failed, counts.pending, counts.by_source) == (1, 1, 1, {"llm": 2})
    [first] = await batches.result_page("b1", after=-1, limit=1)
    assert first.state == "DONE" and first.result is not None and first.result.answer is True


async def test_a_batch_job_reads_as_a_job_its_domains_pending_until_answered_and_answered_again(batches) -> None:
    # (The SQL stores write a batch job's job_domains row with its first result, migration 17.)
    await batches.record(plan(VALUES))
    jobs = batches.store
    job = await jobs.get_job("b1-job0")
    assert job.domains == ("a.com", "b.com") and job.results == (DomainResult("a.com"), DomainResult("b.com"))
    await jobs.set_job_status("b1-job0", JobStatus.RUNNING)
    assert await jobs.save_result("b1-job0", DomainResult(domain="b.com", status=ResultStatus.FAILED,
                                                          source=Source.LLM, error="unreadable"), None)
    redelivered = DomainResult(domain="b.com", status=ResultStatus.DONE, answer=True, confidence=4, source=Source.LLM)
    assert await jobs.save_result("b1-job0", redelivered, None)
    job = await jobs.get_job("b1-job0")
    assert job.domains == ("a.com", "b.com") and job.results[0] == DomainResult("a.com")
    assert (job.results[1].status, job.results[1].answer, job.results[1].error) == (ResultStatus.DONE, True, None)
    counts = await batches.counts("b1")
    assert (counts.done, counts.failed, counts.pending, counts.by_source) == (1, 0, 2, {"llm": 1})
    await jobs.set_job_status("b1-job0", JobStatus.DONE)
    assert not await jobs.save_result("b1-job0", DomainResult(domain="a.com", status=ResultStatus.DONE), None)
    assert (await jobs.get_job("b1-job0")).results[0] == DomainResult("a.com")  # a finished job takes no more
    states = [r.state for r in await batches.result_page("b1", after=-1, limit=10)]
    assert states == ["FAILED", "DONE", None, "FAILED", "PENDING", None]


async def test_a_result_page_shows_every_field_of_a_result_as_a_job_document_does(batches) -> None:
    await batches.record(plan(["a.com", "b.com"]))
    result = DomainResult(
        domain="a.com", status=ResultStatus.DONE, answer=True, confidence=5, reason="Makes soap", source=Source.LLM,
        evidence=(Evidence("https://a.com/é", "Soap “co”", "snippet"), Evidence("https://b.org")),
        evidence_status="found", search_provider="searxng", quote="soap", quote_status=QuoteStatus.VERIFIED,
        tokens_in=1000, tokens_out=100, cost_usd=0.1, answer_tokens_in=900, answer_tokens_out=90, answer_cost_usd=0.09,
        site_status="ok", redirected_to="c.com", redirected_answer=False, evidence_reused_from="other",
        evidence_searched_at=NOW - timedelta(days=1, microseconds=5))
    await batches.store.set_job_status("b1-job0", JobStatus.RUNNING)
    await batches.store.save_result("b1-job0", result, None)
    done, pending = await batches.result_page("b1", after=-1, limit=2)
    assert done.result == shown_result(result) and done.state == "DONE"
    assert pending.result == shown_result(DomainResult("b.com")) and pending.state == "PENDING"


async def test_a_done_rows_line_read_back_is_the_line_of_its_result(batches) -> None:
    # A SQL store keeps a DONE result's line text when saving it (migration 18) and writes the line
    # from it: the same bytes as the line the result itself gives, and the same fields when asked.
    await batches.record(plan(["a.com", "b.com", "c.com"], job_size=3))
    done = DomainResult(
        domain="a.com", status=ResultStatus.DONE, answer=False, confidence=2, reason="A bank, \"not\" soap\n",
        source=Source.LLM, evidence=(Evidence("https://a.com/\u00e9?q=\"x\"", "Bank \u201cco\u201d \U0001f600", "s"),),
        quote="\u202ebank", quote_status=QuoteStatus.UNVERIFIED, tokens_in=1, tokens_out=2, cost_usd=1e-07,
        answer_tokens_in=1, answer_tokens_out=2, answer_cost_usd=0.1 + 0.2, redirected_answer=True,
        evidence_searched_at=NOW - timedelta(microseconds=7))
    failed = DomainResult(domain="b.com", status=ResultStatus.FAILED, error="LLM: no answer")
    await batches.store.set_job_status("b1-job0", JobStatus.RUNNING)
    for result in (done, failed):
        await batches.store.save_result("b1-job0", result, None)
    batch = await batches.get_batch("b1")
    first, second, third = await batches.result_page("b1", after=-1, limit=3)
    assert json_line(batch, first) == json_line(batch, type(first)(first.row, "DONE", shown_result(done)))
    assert first.result == shown_result(done) and second.result == shown_result(failed)
    if isinstance(batches, SqlBatches):
        assert first.shown is not None and second.shown is None and third.shown is None  # only DONE keeps it


async def test_a_sql_store_shows_each_unanswered_domain_as_the_one_shared_no_result(engine) -> None:
    # The result lines write NO_RESULT itself from one text made once: every unanswered row must be it.
    batches = SqlBatches(SqlStore(engine))
    await batches.record(plan(VALUES))
    await batches.store.set_job_status("b1-job0", JobStatus.RUNNING)
    await batches.store.save_result("b1-job0", DomainResult(domain="a.com", status=ResultStatus.DONE, answer=True,
                                                            confidence=5, source=Source.LLM), None)
    await batches.store.set_job_status("b1-job1", JobStatus.FAILED, error="dead-lettered")
    page = await batches.result_page("b1", after=-1, limit=10)
    assert [r.state for r in page] == ["DONE", "PENDING", None, "DONE", "FAILED", None]
    assert [r.result is NO_RESULT for r in page] == [False, True, False, False, True, False]
    assert page[4].job_error == "dead-lettered"
    assert json.loads(json_line(plan(VALUES).batch(), page[4]))["error"] == "dead-lettered"


async def test_rows_are_written_and_read_back_exactly_whatever_their_characters(engine) -> None:
    # PostgreSQL writes them by COPY, whose text format escapes tabs, newlines and backslashes.
    batches = SqlBatches(SqlStore(engine))
    values = ["a\tb.com", "back\\slash.com", "line\nbreak", "ü.com", 'quote".com', "", 3.5, None, ["x", {"k": "\r"}]]
    rows = (InputRow(i, None, json.dumps(v, ensure_ascii=False), v) for i, v in enumerate(values))
    await batches.record(BatchPlan(Batch(id="b1", classifier="cpg", created_at=NOW, owner="key_a"), rows,
                                   read_domain=normalize_domain, job_size=2, max_domains=100,
                                   new_job_id=iter(f"job{i}" for i in itertools.count()).__next__))
    page = await batches.result_page("b1", after=-1, limit=20)
    assert [json.loads(r.row.original) for r in page] == values
    assert page[3].row.domain == "xn--tda.com" and page[3].state == "PENDING"


async def test_a_driver_error_reading_a_page_leaves_as_the_ports_database_failure(engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE batch_rows"))
    with pytest.raises(DatabaseFailure, match="batch_rows"):
        await SqlBatches(SqlStore(engine)).result_page("b1", after=-1, limit=2)


async def test_cancel_fails_only_jobs_not_started(batches) -> None:
    await batches.record(plan(VALUES))
    await batches.store.set_job_status("b1-job0", JobStatus.RUNNING)
    assert await batches.cancel("b1", NOW + timedelta(minutes=1)) == 1
    assert (await batches.get_batch("b1")).cancelled_at == NOW + timedelta(minutes=1)
    counts = await batches.counts("b1")
    assert (counts.pending, counts.cancelled) == (2, 1)
    states = [r.state for r in await batches.result_page("b1", after=-1, limit=10)]
    assert states == ["PENDING", "PENDING", None, "PENDING", "CANCELLED", None]
    assert await batches.cancel("b1", NOW + timedelta(minutes=2)) == 0
    assert (await batches.get_batch("b1")).cancelled_at == NOW + timedelta(minutes=1)  # the first cancel's time


async def test_a_job_knows_its_batch_and_the_reply_is_recorded(batches) -> None:
    await batches.record(plan(VALUES))
    assert await batches.has_unfinished_jobs("b1")
    await batches.store.set_job_status("b1-job0", JobStatus.DONE)
    assert await batches.has_unfinished_jobs("b1")
    await batches.store.set_job_status("b1-job1", JobStatus.FAILED)
    assert not await batches.has_unfinished_jobs("b1")
    assert (await batches.batch_of_job("b1-job1")).id == "b1"
    await batches.record_reply("b1")
    assert (await batches.get_batch("b1")).reply_sent


async def test_the_database_queue_intake_queues_each_job_with_its_rows(engine: Engine) -> None:
    store = SqlStore(engine)
    queue = SqlQueue(engine, "work.fifo", visibility_timeout=30, max_receives=3, poll_interval=10)
    intake = SqlBatchIntake(engine, SqlBatches(store), queue)
    await intake.accept(plan(VALUES))
    messages = await queue.receive(max_messages=10)
    assert sorted(json.loads(m.body)["job_id"] for m in messages) == ["b1-job0", "b1-job1"]
    with pytest.raises(TooManyDomains):
        await intake.accept(plan(VALUES, batch_id="b2", max_domains=2))
    with engine.connect() as conn:
        counts = [conn.execute(text(f"SELECT count(*) FROM {t}")).scalar_one() for t in ("batches", "jobs", "queue_messages")]
    assert counts == [1, 2, 2]  # nothing of the refused batch, not even its first job's message


async def test_a_batch_spend_adds_up_its_jobs_finished_results_as_a_job_total_does(batches) -> None:
    await batches.record(plan(["a.com", "b.com", "c.com", "d.com", "e.com"]))  # jobs of 2: a b | c d | e
    jobs = batches.store
    for job_id in ("b1-job0", "b1-job1"):
        await jobs.set_job_status(job_id, JobStatus.RUNNING)
    await jobs.save_result("b1-job0", DomainResult(domain="a.com", status=ResultStatus.DONE, source=Source.LLM,
                                                   answer=True, confidence=5, tokens_in=1000, tokens_out=100,
                                                   cost_usd=0.1), None)
    await jobs.save_result("b1-job0", DomainResult(domain="b.com", status=ResultStatus.FAILED, source=Source.LLM,
                                                   error="timed out"), None)  # no response: cost unknown
    await jobs.save_result("b1-job1", DomainResult(domain="c.com", status=ResultStatus.DONE, source=Source.LLM,
                                                   answer=False, confidence=4, tokens_in=900, tokens_out=80,
                                                   cost_usd=0.2), None)
    spend = (await batches.counts("b1")).spend
    assert (spend.tokens_in, spend.tokens_out, spend.cost_usd, spend.cost_unknown_domains) == (1900, 180, 0.3, 1)
    # The same rule as each job's total: the batch's spend is the jobs' totals added up.
    results = [result for job_id in ("b1-job0", "b1-job1", "b1-job2")
               for result in (await jobs.get_job(job_id)).results]
    assert spend == total_spend(results)


async def test_a_batch_with_nothing_finished_has_spent_nothing(batches) -> None:
    await batches.record(plan(["a.com"]))
    assert (await batches.counts("b1")).spend == Spend()


async def test_an_owners_batches_are_listed_newest_first_without_anyone_elses(batches) -> None:
    for number, owner in enumerate(["key_a", "key_b", "key_a", "key_a"]):
        batch = Batch(id=f"b{number}", classifier="cpg", created_at=NOW + timedelta(minutes=number), owner=owner,
                      request_hash="h")
        await batches.record(BatchPlan(batch, iter([InputRow(0, None, '"a.com"', "a.com")]),
                                       read_domain=normalize_domain, job_size=2, max_domains=10,
                                       new_job_id=lambda number=number: f"b{number}-job"))
    assert [b.id for b in await batches.owned_batches("key_a", limit=2)] == ["b3", "b2"]
    assert [b.id for b in await batches.owned_batches("key_b", limit=10)] == ["b1"]
    assert await batches.owned_batches("key_c", limit=10) == []
