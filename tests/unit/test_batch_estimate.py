"""The dry run's rule: tokens per question from stored answers once there are enough, else from the
prompt; the counts are those the real request makes; prices asked only when there is something
to price, and an unknown price said as such."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.providers import FixedPricing
from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.batches import InputRow
from firmsift.domain.clock import utc_now
from firmsift.domain.estimates import (
    MIN_SAMPLES,
    PROMPT,
    STORED,
    LATENCY_SAMPLES,
    DomainTally,
    LatencyHistory,
    TokenHistory,
    WorkerPace,
    estimated_tokens,
    tokens_per_question,
    wall_seconds,
)
from firmsift.domain.model import Answer, KnownCompany, ResultStatus, Source
from firmsift.domain.normalize import normalize_domain
from firmsift.ports.providers import Pricing
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batch_intake import RecordBatchThenPublish, SubmitBatch, submit_batch

CATALOG = load_catalog(None)
CPG = CATALOG["cpg"]
PACE = WorkerPace(llm_concurrency=4, domains_at_once=8)
histories = st.builds(TokenHistory, st.integers(0, 10_000), st.floats(0, 1e6), st.floats(0, 1e5))


@given(histories)
def test_the_stored_average_is_used_once_there_are_enough_answers(history: TokenHistory) -> None:
    per_question = tokens_per_question(history, CPG)
    if history.answers >= MIN_SAMPLES:
        assert (per_question.basis, per_question.samples) == (STORED, history.answers)
        assert (per_question.tokens_in, per_question.tokens_out) == (round(history.tokens_in), round(history.tokens_out))
    else:
        assert per_question == tokens_per_question(TokenHistory(), CPG)  # the prompt's length, whatever was stored
        assert per_question.basis == PROMPT and per_question.tokens_in > 0 and per_question.tokens_out > 0


@given(st.integers(0, 100_000), st.integers(0, 100_000), histories)
def test_only_the_domains_to_ask_cost_tokens(known: int, new: int, history: TokenHistory) -> None:
    per_question = tokens_per_question(history, CPG)
    tokens = estimated_tokens(DomainTally(known=known, cached=known, new=new), per_question)
    assert tokens == (new * per_question.tokens_in, new * per_question.tokens_out)


def estimator(store: InMemoryStore, pricing: Pricing | None = None) -> BatchEstimator:
    def prices() -> Pricing:
        if pricing is None:
            raise AssertionError("nothing to price: the price map must not be built")
        return pricing

    def batch_prices() -> Pricing:
        raise AssertionError("a standard batch is priced at the normal price")

    return BatchEstimator(catalog=CATALOG, known=store, answers=store, history=store, pricing=prices,
                          batch_pricing=batch_prices, model="m", pace=PACE, job_size=3, max_domains=50,
                          precheck_max_age=timedelta(days=7))


def command(values: list[object]) -> SubmitBatch:
    return SubmitBatch("cpg", [InputRow(i, None, json.dumps(v), v) for i, v in enumerate(values)], normalize_domain, "h")


cells = st.one_of(st.sampled_from(["a.com", "A.com", "https://www.b.com/x", "c.org", "shop.known.com", "known.com",
                                   "fresh.com", "10.0.0.1", "", "not a domain"]),
                  st.from_regex(r"[a-d]{1,2}\.(com|net)", fullmatch=True), st.integers(), st.none())


@settings(max_examples=60, deadline=None)
@given(st.lists(cells, min_size=1, max_size=40))
def test_the_dry_run_counts_what_the_real_request_accepts(values: list[object]) -> None:
    async def both() -> tuple[dict[str, object], object]:
        store = InMemoryStore()
        await store.upsert_known([KnownCompany("known.com")])
        estimate = await estimator(store, FixedPricing(1.0, 2.0)).estimate(command(values))
        batches = InMemoryBatches(store)
        ids = (f"id{i}" for i in itertools.count())
        real = await submit_batch(command(values), catalog=CATALOG, batches=batches, job_size=3, max_domains=50,
                                  intake=RecordBatchThenPublish(batches, store, InMemoryQueue("w.fifo", visibility_timeout=30, max_receives=3)),
                                  new_id=lambda: next(ids))
        return estimate, real

    estimate, real = anyio.run(both)
    assert (estimate["total"], estimate["accepted"], estimate["duplicates"]) == (
        real.batch.total, real.batch.accepted, real.batch.duplicates)
    assert [row["index"] for row in estimate["rejected"]] == [row.position for row in real.rejected]
    paths = estimate["human_answers"] + estimate["known_companies"] + estimate["cached"] + estimate["cached_precheck"] + estimate["to_ask"]
    assert paths == real.batch.accepted


def test_nothing_to_ask_builds_no_price_map_and_costs_nothing() -> None:
    store = InMemoryStore()
    anyio.run(lambda: store.upsert_known([KnownCompany("known.com")]))
    llm = anyio.run(lambda: estimator(store).estimate(command(["known.com", "shop.known.com"])))["llm"]
    assert (llm["tokens_in"], llm["cost_usd"], llm["cost"], llm["wall_time"]) == (0, 0.0, "known", "none to ask")


def test_an_unknown_price_is_said_unknown_never_zero() -> None:
    store = InMemoryStore()
    llm = anyio.run(lambda: estimator(store, FixedPricing(1.0, 2.0, unknown=frozenset({"m"}))).estimate(
        command(["a.com"])))["llm"]
    assert llm["cost_usd"] is None and llm["cost"].startswith("unknown: no price for m")


def test_a_failed_answer_or_one_past_its_age_is_asked_again() -> None:
    store = InMemoryStore()
    old = utc_now() - timedelta(days=90)
    store.answers[("old.com", "cpg")] = Answer("old.com", "cpg", ResultStatus.DONE, old, Source.LLM, answer=True,
                                               confidence=5, prompt_version=CPG.prompt_version)
    store.answers[("failed.com", "cpg")] = Answer("failed.com", "cpg", ResultStatus.FAILED, utc_now(), Source.LLM)
    store.answers[("fresh.com", "cpg")] = Answer("fresh.com", "cpg", ResultStatus.DONE, utc_now(), Source.LLM,
                                                 answer=True, confidence=5, prompt_version=CPG.prompt_version)
    document = anyio.run(lambda: estimator(store, FixedPricing(1.0, 2.0)).estimate(
        command(["old.com", "failed.com", "fresh.com"])))
    assert (document["cached"], document["to_ask"]) == (1, 2)


@pytest.mark.parametrize("samples", [MIN_SAMPLES - 1, MIN_SAMPLES])
def test_stored_token_counts_of_llm_answers_are_averaged(samples: int) -> None:
    store = InMemoryStore()
    for i in range(samples):
        store.answers[(f"d{i}.com", "cpg")] = Answer(f"d{i}.com", "cpg", ResultStatus.DONE, utc_now(), Source.LLM,
                                                     tokens_in=1000 + i % 2, tokens_out=50)
    store.answers[("x.com", "cpg")] = Answer("x.com", "cpg", ResultStatus.DONE, utc_now(), Source.PRECHECK)
    history = anyio.run(lambda: store.token_history("cpg"))
    assert history.answers == samples and history.tokens_out == 50
    assert tokens_per_question(history, CPG).basis == (STORED if samples >= MIN_SAMPLES else PROMPT)


latencies = st.builds(LatencyHistory, st.integers(1, LATENCY_SAMPLES), st.floats(0, 600), st.floats(0, 60))
paces = st.builds(WorkerPace, st.integers(1, 64), st.sampled_from([0.0, 1.0, 60.0, 600.0]), st.integers(1, 256))


@given(st.integers(1, 100_000), latencies, paces)
def test_the_wall_time_is_the_slowest_of_the_workers_limits(to_ask: int, latency: LatencyHistory,
                                                            pace: WorkerPace) -> None:
    seconds = wall_seconds(to_ask, latency, pace)
    assert seconds is not None
    assert seconds >= to_ask * latency.llm_seconds / pace.llm_concurrency * (1 - 1e-9)
    assert seconds >= to_ask * (latency.llm_seconds + latency.evidence_seconds) / pace.domains_at_once * (1 - 1e-9)
    if pace.llm_requests_per_minute:
        assert seconds >= to_ask * 60 / pace.llm_requests_per_minute * (1 - 1e-9)
    assert wall_seconds(2 * to_ask, latency, pace) == pytest.approx(2 * seconds)  # linear in the domains to ask


@given(latencies, paces)
def test_the_wall_time_is_unknown_without_history_and_zero_with_nothing_to_ask(latency: LatencyHistory,
                                                                               pace: WorkerPace) -> None:
    assert wall_seconds(1, LatencyHistory(), pace) is None
    assert wall_seconds(0, LatencyHistory(), pace) == wall_seconds(0, latency, pace) == 0.0


def test_a_worker_that_runs_nothing_at_once_is_refused() -> None:
    for bad in ({"llm_concurrency": 0}, {"llm_concurrency": 1, "domains_at_once": 0},
                {"llm_concurrency": 1, "llm_requests_per_minute": -1.0}):
        with pytest.raises(ValueError, match="at least one"):
            WorkerPace(**bad)


def test_the_dry_run_says_the_wall_time_from_the_latest_answers_latencies() -> None:
    store = InMemoryStore()
    assert anyio.run(lambda: estimator(store, FixedPricing(1.0, 2.0)).estimate(command(["a.com"])))["llm"][
        "wall_time"].startswith("unknown: no LLM answer")
    for i in range(3):
        store.answers[(f"d{i}.com", "cpg")] = Answer(f"d{i}.com", "cpg", ResultStatus.DONE, utc_now(), Source.LLM,
                                                     llm_seconds=2.0, evidence_seconds=1.0)
    llm = anyio.run(lambda: estimator(store, FixedPricing(1.0, 2.0)).estimate(
        command([f"new{i}.com" for i in range(40)])))["llm"]
    # 40 × 2 s over 4 LLM slots = 20 s; 40 × 3 s over 8 domains at once = 15 s: the slots hold it back.
    assert llm["wall_time_seconds"] == 20.0
    assert llm["wall_time"] == ("about 20 s for one worker (mean of the latest 3 answers: LLM 2.00 s, "
                                "evidence 1.00 s)")
