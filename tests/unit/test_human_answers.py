"""Human answers on the in-memory graph: the rule for reading one, and the cheapest path's order
(a human answer beats a known company, a fresh cached answer and the LLM, and is never expired
or overwritten), the use-cases' idempotence and undo, and the dry run's count."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pytest
from starlette.testclient import TestClient

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.human_answers import InMemoryHumanAnswers
from firmsift.adapters.memory.providers import ScriptedLLM
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.batches import InputRow
from firmsift.domain.errors import InvalidRequest, UnknownClassifier
from firmsift.domain.estimates import WorkerPace
from firmsift.domain.human_answers import (
    MAX_NOTE_CHARS,
    HumanAnswer,
    HumanAnswerNotFound,
    parse_answer_word,
    read_human_answer,
)
from firmsift.domain.model import Answer, Job, JobStatus, KnownCompany, ResultStatus, Source
from firmsift.domain.normalize import normalize_domain
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.wiring.runtime import running_worker
from firmsift.entrypoints.settings import Settings
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batch_intake import SubmitBatch
from firmsift.services.human_answers import correct_answer, undo_correction
from firmsift.services.process import process_job

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 12, 1, 12, tzinfo=timezone.utc)
CATALOG = load_catalog(None)
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "Makes and sells packaged snacks"}'


def read(domain: object = "acme.com", answer: object = True, note: object = "sells soap") -> HumanAnswer:
    return read_human_answer(domain, "cpg", answer, note, corrected_by="key_a", corrected_at=NOW)


def test_a_human_answer_is_read_with_its_domain_normalized_and_its_note_trimmed() -> None:
    assert read("https://WWW.Acme.com/about", False, "  a bank \n") == HumanAnswer(
        "acme.com", "cpg", False, "a bank", "key_a", NOW)


@pytest.mark.parametrize(("domain", "answer", "note", "reason"), [
    ("localhost", True, "x", "domain 'localhost'"),
    ("acme.com", "yes", "x", "answer must be true or false"),
    ("acme.com", 1, "x", "answer must be true or false"),
    ("acme.com", True, "   ", "note is required"),
    ("acme.com", True, None, "note is required"),
    ("acme.com", True, "x" * (MAX_NOTE_CHARS + 1), f"longer than {MAX_NOTE_CHARS}"),
    ("acme.com", True, "a\x00b", "NUL"),
])
def test_every_bad_value_is_refused_with_its_reason(domain: object, answer: object, note: object, reason: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        read(domain, answer, note)
    assert reason in refused.value.rejections[0].reason


def test_all_problems_are_listed_at_once() -> None:
    with pytest.raises(InvalidRequest) as refused:
        read("a..b", None, "")
    assert len(refused.value.rejections) == 3


@pytest.mark.parametrize(("word", "value"), [("yes", True), (" TRUE ", True), ("No", False), ("false", False)])
def test_answer_words(word: str, value: bool) -> None:
    assert parse_answer_word(word) is value


@pytest.mark.parametrize("word", ["", "y", "1", "maybe"])
def test_other_answer_words_are_refused(word: str) -> None:
    with pytest.raises(ValueError, match="must be yes, no, true or false"):
        parse_answer_word(word)


def graph():  # noqa: ANN201 - the in-memory Container
    container = in_memory_container(Settings())
    container.llm.override(ScriptedLLM(YES))
    return container


async def run_job(container, *domains: str, job_id: str = "job-1") -> Job:  # noqa: ANN001
    store: InMemoryStore = container.store()
    await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW, domains=domains))
    job = await process_job(job_id, container.job_dependencies(now=lambda: NOW))
    assert job is not None and job.status is JobStatus.DONE
    return job


async def correct(container, domain: str, answer: bool, note: str, classifier: str = "cpg"):  # noqa: ANN001, ANN201
    return await correct_answer(domain, classifier, answer, note, corrected_by="key_a", catalog=CATALOG,
                                store=container.human_answers(), now=lambda: NOW)


async def test_a_human_answer_beats_a_known_company_a_fresh_cached_answer_and_the_llm() -> None:
    container = graph()
    store: InMemoryStore = container.store()
    await store.upsert_known([KnownCompany("known.com", "Known")])
    cached = Answer("cached.com", "cpg", ResultStatus.DONE, NOW, Source.LLM, answer=True, confidence=5, reason="old",
                    prompt_version=CATALOG["cpg"].prompt_version)
    store.answers[("cached.com", "cpg")] = cached
    for domain in ("known.com", "shop.known.com", "cached.com", "new.com"):
        await correct(container, domain, False, f"checked {domain} by hand")
    job = await run_job(container, "known.com", "shop.known.com", "cached.com", "new.com")
    assert [(r.domain, r.status, r.answer, r.confidence, r.source, r.reason, r.cost_usd) for r in job.results] == [
        (d, ResultStatus.DONE, False, 5, Source.HUMAN, f"checked {d} by hand", 0.0)
        for d in ("known.com", "shop.known.com", "cached.com", "new.com")]
    assert container.llm().history == []
    assert store.answers == {("cached.com", "cpg"): cached}  # the cache is neither written nor overwritten


async def test_a_human_answer_is_per_classifier_and_per_domain() -> None:
    container = graph()
    await correct(container, "acme.com", False, "a bank")
    await correct(container, "shop.acme.com", True, "the shop sells soap")
    job = await run_job(container, "acme.com", "sub.acme.com", "shop.acme.com")
    assert [(r.domain, r.source) for r in job.results] == [
        ("acme.com", Source.HUMAN), ("sub.acme.com", Source.LLM), ("shop.acme.com", Source.HUMAN)]
    assert (await container.human_answers().human_answers(["acme.com"], "other")) == {}


async def test_a_human_answer_never_expires_and_the_llm_never_replaces_it() -> None:
    container = graph()
    await correct_answer("acme.com", "cpg", False, "a bank", corrected_by=None, catalog=CATALOG,
                         store=container.human_answers(), now=lambda: NOW - timedelta(days=4000))
    container.store().answers[("acme.com", "cpg")] = Answer(
        "acme.com", "cpg", ResultStatus.DONE, NOW, Source.LLM, answer=True, confidence=5,
        prompt_version=CATALOG["cpg"].prompt_version)  # a newer confident LLM answer says otherwise
    for n in range(2):
        job = await run_job(container, "acme.com", job_id=f"job-{n}")
        assert (job.results[0].answer, job.results[0].source) == (False, Source.HUMAN)
    assert container.llm().history == []


async def test_after_an_undo_the_domain_takes_the_usual_path_again() -> None:
    container = graph()
    await correct(container, "acme.com", False, "a bank")
    undone = await undo_correction("acme.com", "cpg", catalog=CATALOG, store=container.human_answers())
    assert (undone.removed.note, undone.restored) == ("a bank", None)
    job = await run_job(container, "acme.com")
    assert (job.results[0].answer, job.results[0].source) == (True, Source.LLM)
    assert len(container.llm().history) == 1


async def test_setting_the_same_correction_again_changes_nothing_and_adds_nothing_to_undo() -> None:
    container = graph()
    first = await correct(container, "acme.com", False, "a bank")
    again = await correct(container, "www.acme.com", False, "a bank")
    assert (first.changed, again.changed, again.answer) == (True, False, first.answer)
    await undo_correction("acme.com", "cpg", catalog=CATALOG, store=container.human_answers())
    with pytest.raises(HumanAnswerNotFound):
        await undo_correction("acme.com", "cpg", catalog=CATALOG, store=container.human_answers())


async def test_a_new_note_is_a_new_correction_and_undo_restores_the_earlier_one() -> None:
    container = graph()
    await correct(container, "acme.com", False, "a bank")
    second = await correct(container, "acme.com", False, "a bank: annual report checked")
    assert second.changed and second.replaced is not None and second.replaced.note == "a bank"
    undone = await undo_correction("acme.com", "cpg", catalog=CATALOG, store=container.human_answers())
    assert undone.restored is not None and undone.restored.note == "a bank"


async def test_an_unknown_classifier_is_refused() -> None:
    container = graph()
    with pytest.raises(UnknownClassifier):
        await correct(container, "acme.com", True, "soap", classifier="nope")
    with pytest.raises(UnknownClassifier):
        await undo_correction("acme.com", "nope", catalog=CATALOG, store=container.human_answers())


async def test_the_dry_run_counts_human_answers_first_at_no_cost() -> None:
    store, human = InMemoryStore(), InMemoryHumanAnswers()
    await store.upsert_known([KnownCompany("known.com")])
    await human.set_human_answer(HumanAnswer("known.com", "cpg", False, "not any more", None, NOW))
    await human.set_human_answer(HumanAnswer("new.com", "cpg", True, "soap", None, NOW))

    def no_prices():  # noqa: ANN202
        raise AssertionError("nothing to ask: nothing to price")

    estimator = BatchEstimator(catalog=CATALOG, known=store, answers=store, history=store, pricing=no_prices,
                               batch_pricing=no_prices,
                               model="m", pace=WorkerPace(llm_concurrency=4), job_size=3, max_domains=50,
                               human=human)
    values = ["known.com", "new.com"]
    estimate = await estimator.estimate(SubmitBatch(
        "cpg", [InputRow(i, None, json.dumps(v), v) for i, v in enumerate(values)], normalize_domain, "h"))
    assert (estimate["human_answers"], estimate["known_companies"], estimate["to_ask"]) == (2, 0, 0)
    assert estimate["llm"]["cost_usd"] == 0.0


def test_a_batch_over_http_answers_corrected_domains_from_their_human_answers() -> None:
    """PUT a correction, dry-run and POST a batch, and read it back: the embedded worker answers
    the corrected domain from it (by_source `human`) and asks the LLM only about the other."""
    container = in_memory_container(Settings(wait_time=0.2))
    container.llm.override(ScriptedLLM(YES))
    with TestClient(container.api(background=lambda: running_worker(container))) as client:
        assert client.put("/answers/cpg/bank.example.com", json={"answer": False, "note": "a bank"}).is_success
        batch = {"classifier": "cpg", "domains": ["https://www.bank.example.com/", "snacks.example.com"]}
        estimate = client.post("/batches?dry_run=true", json=batch).json()
        assert (estimate["human_answers"], estimate["to_ask"]) == (1, 1)
        location = client.post("/batches", json=batch).headers["location"]
        for _ in range(1000):
            shown = client.get(location).json()
            if shown["status"] != "RUNNING":
                break
            time.sleep(0.01)
        rows = [json.loads(line) for line in client.get(f"{location}/results").text.splitlines()]
    assert shown["by_source"] == {"human": 1, "llm": 1}
    assert [(r["classified_domain"], r["answer"], r["source"], r["reason"]) for r in rows] == [
        ("bank.example.com", False, "human", "a bank"), ("snacks.example.com", True, "llm", "Makes snacks.")]
    assert container.llm().calls_about("bank.example.com") == 0
