"""What answers cost: tokens and USD recorded per answer and per job result, totalled per job,
shown in the job document and counted in the metrics (issues 13.5 and 14.3)."""

from __future__ import annotations

import asyncio
import csv
import io
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from firmsift.adapters.decorators.prometheus_metrics import MeteredLLM, Metrics
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.domain.job_document import job_document
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, KnownCompany, ResultStatus, Source
from firmsift.domain.outside_text import UnstorableText
from firmsift.domain.spend import Spend, total_spend
from firmsift.entrypoints.cli.classify_rows import CsvRowWriter, read_row
from firmsift.services.process import process_job
from tests.unit.test_process_job import YES, add_job, cached, make

pytestmark = pytest.mark.anyio
# The in-memory graph prices every model at 1 USD per million tokens in and 2 out.
TOKENS = (1000, 100)
COST = (1000 * 1.0 + 100 * 2.0) / 1_000_000
COST_COLUMNS = ("tokens_in", "tokens_out", "cost_usd", "answer_tokens_in", "answer_tokens_out", "answer_cost_usd")


async def test_an_llm_answer_records_its_tokens_and_cost_in_the_answer_and_the_result() -> None:
    store, deps, _ = make(llm=ScriptedLLM(YES, tokens=TOKENS))
    await add_job(store, "a.com")
    job = await process_job("job-1", deps)
    result = job.results[0]
    assert (result.tokens_in, result.tokens_out, result.cost_usd) == (*TOKENS, COST)
    assert (result.answer_tokens_in, result.answer_tokens_out, result.answer_cost_usd) == (*TOKENS, COST)
    stored = store.answers[("a.com", "cpg")]
    assert (stored.tokens_in, stored.tokens_out, stored.cost_usd) == (*TOKENS, COST)


async def test_a_cached_answer_costs_the_job_nothing_and_shows_what_it_cost_when_made() -> None:
    store, deps, llm = make(llm=ScriptedLLM(YES, tokens=TOKENS))
    store.answers[("a.com", "cpg")] = replace(cached("a.com", 5, age_days=1), tokens_in=900, tokens_out=90,
                                              cost_usd=0.5)
    store.answers[("old.com", "cpg")] = cached("old.com", 5, age_days=1)  # stored before costs were
    await add_job(store, "a.com", "old.com")
    job = await process_job("job-1", deps)
    assert llm.history == []
    assert [(r.source, r.tokens_in, r.tokens_out, r.cost_usd) for r in job.results] == [(Source.CACHE, 0, 0, 0.0)] * 2
    assert [(r.answer_tokens_in, r.answer_tokens_out, r.answer_cost_usd) for r in job.results] == [
        (900, 90, 0.5), (None, None, None)]
    assert total_spend(job.results) == Spend(0, 0, 0.0, 0)


async def test_a_known_company_costs_nothing_and_has_no_answer_call() -> None:
    store, deps, _ = make()
    await store.upsert_known([KnownCompany("unilever.com", "Unilever")])
    await add_job(store, "unilever.com")
    [result] = (await process_job("job-1", deps)).results
    assert (result.tokens_in, result.tokens_out, result.cost_usd) == (0, 0, 0.0)
    assert (result.answer_tokens_in, result.answer_tokens_out, result.answer_cost_usd) == (None, None, None)


async def test_a_call_shared_by_two_jobs_is_paid_by_the_job_that_made_it() -> None:
    store, deps, llm = make(llm=ScriptedLLM(YES, delay=0.05, tokens=TOKENS))
    await add_job(store, "same.com", job_id="job-a")
    await add_job(store, "same.com", job_id="job-b")
    jobs = await asyncio.gather(process_job("job-a", deps), process_job("job-b", deps))
    assert len(llm.history) == 1
    spent = sorted((j.results[0].source.value, j.results[0].cost_usd, j.results[0].answer_cost_usd) for j in jobs)
    assert spent == [("cache", 0.0, COST), ("llm", COST, COST)]


async def test_a_failed_call_shared_by_two_jobs_is_paid_by_the_job_that_made_it() -> None:
    cut_off = ProviderError("cut off", cause=FailureCause.CUT_OFF, prompt_tokens=1000, completion_tokens=100)
    store, deps, llm = make(llm=ScriptedLLM(cut_off, delay=0.05))
    await add_job(store, "same.com", job_id="job-a")
    await add_job(store, "same.com", job_id="job-b")
    jobs = await asyncio.gather(process_job("job-a", deps), process_job("job-b", deps))
    assert len(llm.history) == 1
    # Both are the LLM's failure (never the cache's), but only one job made the call.
    spent = sorted((j.results[0].source.value, j.results[0].cost_usd) for j in jobs)
    assert spent == [("llm", 0.0), ("llm", COST)]


async def test_a_model_without_a_price_keeps_its_tokens_and_an_unknown_cost() -> None:
    store, deps, _ = make(llm=ScriptedLLM(YES, tokens=TOKENS), pricing=FixedPricing(1.0, 2.0, frozenset({"scripted-model"})))
    await add_job(store, "a.com", "b.com")
    job = await process_job("job-1", deps)
    assert [(r.tokens_in, r.tokens_out, r.cost_usd) for r in job.results] == [(*TOKENS, None)] * 2
    assert total_spend(job.results) == Spend(2000, 200, 0.0, 2)


async def test_tokens_not_reported_leave_tokens_and_cost_unknown() -> None:
    store, deps, _ = make(llm=ScriptedLLM(YES))  # reports no usage
    await add_job(store, "a.com")
    [result] = (await process_job("job-1", deps)).results
    assert (result.tokens_in, result.tokens_out, result.cost_usd) == (None, None, None)


@pytest.mark.parametrize(("failure", "expected"), [
    # An answer that came back cut off was billed: the failed result says what for.
    (ProviderError("cut off", cause=FailureCause.CUT_OFF, prompt_tokens=1000, completion_tokens=100),
     (1000, 100, COST)),
    # A call that failed without a response: whether it was billed is unknown, never 0.
    (ProviderError("timed out", cause=FailureCause.TIMEOUT), (None, None, None)),
])
async def test_a_failed_call_records_what_the_provider_billed_if_it_said(
        failure: ProviderError, expected: tuple[object, ...]) -> None:
    store, deps, _ = make(llm=ScriptedLLM(failure))
    await add_job(store, "a.com")
    [result] = (await process_job("job-1", deps)).results
    assert result.status is ResultStatus.FAILED
    assert (result.tokens_in, result.tokens_out, result.cost_usd) == expected
    assert store.answers[("a.com", "cpg")].cost_usd == expected[2]


async def test_an_unreadable_answer_was_billed_all_the_same() -> None:
    store, deps, _ = make(llm=ScriptedLLM("I would rather not say.", tokens=TOKENS))
    await add_job(store, "a.com")
    [result] = (await process_job("job-1", deps)).results
    assert result.status is ResultStatus.FAILED and result.cost_usd == COST


class _RefusingAnswers(InMemoryStore):
    """A store whose database refuses every answer (as one outside its encoding would be)."""

    async def save_result(self, job_id: str, result: DomainResult, answer: Answer | None) -> bool:
        if answer is not None:
            raise UnstorableText("the database refused the result")
        return await super().save_result(job_id, result, answer)


async def test_an_answer_the_store_refuses_fails_its_domain_and_still_shows_what_its_call_cost() -> None:
    store, deps, _ = make(llm=ScriptedLLM(YES, tokens=TOKENS), store=_RefusingAnswers())
    await add_job(store, "a.com")
    [result] = (await process_job("job-1", deps)).results
    assert result.status is ResultStatus.FAILED and result.error.startswith("the answer could not be stored")
    assert (result.tokens_in, result.tokens_out, result.cost_usd, result.answer_cost_usd) == (*TOKENS, COST, COST)


def finished(cost: float | None, tokens: tuple[int | None, int | None] = (10, 5),
             status: ResultStatus = ResultStatus.DONE) -> DomainResult:
    return DomainResult(domain="x.com", status=status, tokens_in=tokens[0], tokens_out=tokens[1], cost_usd=cost)


def test_a_total_adds_the_finished_results_and_counts_the_unknown_costs() -> None:
    results = [finished(0.1), finished(0.2), finished(None, (None, None)), finished(0.0, (0, 0)),
               finished(None, (7, 3), ResultStatus.FAILED), DomainResult(domain="pending.com")]
    assert total_spend(results) == Spend(tokens_in=27, tokens_out=13, cost_usd=0.3, cost_unknown_domains=2)


@given(st.lists(st.one_of(st.none(), st.floats(min_value=0, max_value=10, allow_nan=False)), max_size=30))
def test_a_total_is_the_sum_of_the_known_costs_and_the_count_of_the_unknown(costs: list[float | None]) -> None:
    spend = total_spend(finished(cost) for cost in costs)
    known = [c for c in costs if c is not None]
    assert spend.cost_unknown_domains == len(costs) - len(known)
    assert spend.cost_usd == pytest.approx(sum(known), abs=1e-9)
    # Split anywhere (one job and the next, the jobs of a batch), totals add up to the whole.
    half = len(costs) // 2
    first, second = total_spend(finished(c) for c in costs[:half]), total_spend(finished(c) for c in costs[half:])
    assert first.cost_unknown_domains + second.cost_unknown_domains == spend.cost_unknown_domains
    assert first.cost_usd + second.cost_usd == pytest.approx(spend.cost_usd, abs=1e-9)


def test_the_job_document_shows_each_results_spend_its_answers_cost_and_the_total() -> None:
    paid = DomainResult(domain="a.com", status=ResultStatus.DONE, source=Source.LLM, tokens_in=1000,
                        tokens_out=100, cost_usd=COST, answer_tokens_in=1000, answer_tokens_out=100,
                        answer_cost_usd=COST)
    reused = DomainResult(domain="b.com", status=ResultStatus.DONE, source=Source.CACHE, tokens_in=0, tokens_out=0,
                          cost_usd=0.0, answer_tokens_in=800, answer_tokens_out=80, answer_cost_usd=0.00096)
    unknown = DomainResult(domain="c.com", status=ResultStatus.FAILED, source=Source.LLM, error="timed out")
    job = Job(id="j", classifier="cpg", status=JobStatus.DONE, created_at=datetime(2026, 1, 1, tzinfo=UTC),
              domains=("a.com", "b.com", "c.com", "d.com"), results=(paid, reused, unknown))
    document = job_document(job)
    shown = [(r["tokens_in"], r["tokens_out"], r["cost_usd"], r["answer_cost_usd"]) for r in document["results"]]
    assert shown == [(1000, 100, COST, COST), (0, 0, 0.0, 0.00096), (None, None, None, None),
                     (None, None, None, None)]  # d.com: pending, nothing spent yet
    assert document["total"] == {"tokens_in": 1000, "tokens_out": 100, "cost_usd": COST, "cost_unknown_domains": 1}


async def test_metrics_count_tokens_by_model_and_direction_and_the_cost_where_known() -> None:
    metrics = Metrics(CollectorRegistry())
    llm = ScriptedLLM(YES, tokens=TOKENS)
    metered = MeteredLLM(llm, metrics, FixedPricing(1.0, 2.0))
    await metered.complete("system", "Domain: a.com\n", json_schema={})
    llm.enqueue(ProviderError("cut off", prompt_tokens=50, completion_tokens=400))
    with pytest.raises(ProviderError):
        await metered.complete("system", "Domain: b.com\n", json_schema={})
    llm.enqueue(ProviderError("timed out"))  # no response: nothing billed that anyone knows of
    with pytest.raises(ProviderError):
        await metered.complete("system", "Domain: c.com\n", json_schema={})
    unpriced = MeteredLLM(ScriptedLLM(YES, model="local-model", tokens=(5, 5)), metrics,
                          FixedPricing(1.0, 2.0, frozenset({"local-model"})))
    await unpriced.complete("system", "Domain: d.com\n", json_schema={})

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    assert sample("firmsift_llm_tokens_total", model="scripted-model", direction="in") == 1050
    assert sample("firmsift_llm_tokens_total", model="scripted-model", direction="out") == 500
    assert sample("firmsift_llm_cost_usd_total", model="scripted-model") == pytest.approx(COST + 0.00085)
    assert sample("firmsift_llm_calls_cost_unknown_total", model="scripted-model") is None
    assert sample("firmsift_llm_tokens_total", model="local-model", direction="in") == 5
    assert sample("firmsift_llm_cost_usd_total", model="local-model") is None
    assert sample("firmsift_llm_calls_cost_unknown_total", model="local-model") == 1


def test_classify_csv_writes_the_cost_columns_fixed_point_and_unknown_as_empty() -> None:
    out = io.StringIO()
    writer = CsvRowWriter(out, ["website"])
    for cell, costs in (("a.com", (1412, 61, 0.0000015, 1412, 61, 0.0000015)), ("b.com", (0, 0, 0.0, 9, 1, 2.5e-05)),
                        ("c.com", (None, None, None, None, None, None))):
        row = read_row(2, [cell], 1, 0)
        row.result = {"domain": cell, "status": "DONE", **dict(zip(COST_COLUMNS, costs))}
        writer.write(row)
    header, *rows = list(csv.reader(io.StringIO(out.getvalue())))
    at = header.index("tokens_in")
    assert header[at:at + 6] == list(COST_COLUMNS)
    assert [r[at:at + 6] for r in rows] == [["1412", "61", "0.0000015", "1412", "61", "0.0000015"],
                                            ["0", "0", "0", "9", "1", "0.000025"], [""] * 6]
