"""Evidence reused across classifiers, on the in-memory graph: a second classifier asked about a
domain answered recently sends the stored evidence instead of searching again, and says so."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from importlib import resources
from pathlib import Path

import pytest
from dependency_injector import providers
from starlette.testclient import TestClient

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.providers import ScriptedLLM, StaticSearch
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.evidence_status import FOUND
from firmsift.domain.job_document import job_document
from firmsift.domain.model import Answer, Evidence, Job, JobStatus, QuoteStatus, ResultStatus, Source
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.wiring.runtime import running_worker
from firmsift.entrypoints.settings import Settings
from firmsift.services.process import process_job

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
# Quotes StaticSearch's snippet: verified only against evidence holding it.
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "makes and sells packaged snacks"}'
CPG = load_catalog()["cpg"]
FOOD = replace(CPG, name="food", prompt_version="food-1")  # a second classifier (same answer field)


class World:
    """The in-memory graph with two classifiers, its search and LLM recording their calls."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.container = in_memory_container(settings or Settings())
        self.llm = ScriptedLLM(YES)
        self.search = StaticSearch(name="homepage")
        self.container.llm.override(self.llm)
        self.container.searches.override(providers.Object((self.search,)))
        self.store: InMemoryStore = self.container.store()
        self.catalog = {"cpg": CPG, "food": FOOD}

    async def ask(self, classifier: str, domain: str, at: datetime) -> Job:
        job_id = f"{classifier}:{domain}:{at.isoformat()}"
        await self.store.create_job(Job(id=job_id, classifier=classifier, status=JobStatus.PENDING,
                                        created_at=at, domains=(domain,)))
        deps = self.container.job_dependencies(now=lambda: at, catalog=self.catalog)
        job = await process_job(job_id, deps)
        assert job is not None and job.status is JobStatus.DONE, job
        return job

    def reuses(self, classifier: str) -> float:
        value = self.container.metrics().registry.get_sample_value(
            "firmsift_evidence_reused_total", {"classifier": classifier})
        return value or 0.0


def stored_cpg_answer(age_days: float, **changes: object) -> Answer:
    values: dict[str, object] = dict(
        domain="a.com", classifier="cpg", status=ResultStatus.DONE, answered_at=NOW - timedelta(days=age_days),
        source=Source.LLM, answer=True, confidence=5, reason="r", prompt_version="cpg-old",
        evidence=(Evidence("https://a.com/", "A", "a.com makes and sells packaged snacks and drinks."),),
        evidence_status=FOUND, search_provider="searxng")
    values.update(changes)
    return Answer(**values)  # type: ignore[arg-type]


async def test_a_second_classifier_reuses_the_first_ones_evidence_without_searching() -> None:
    world = World()
    first = (await world.ask("cpg", "a.com", NOW)).results[0]
    assert world.search.queries == ["a.com"] and first.evidence_reused_from is None

    later = NOW + timedelta(days=10)
    second = (await world.ask("food", "a.com", later)).results[0]
    assert world.search.queries == ["a.com"]  # no second search
    assert len(world.llm.history) == 2  # the LLM is asked all the same
    assert second.source is Source.LLM and second.evidence == first.evidence
    assert (second.evidence_status, second.search_provider) == (FOUND, "homepage")  # the original search's
    assert (second.evidence_reused_from, second.evidence_searched_at) == ("cpg", NOW)
    # The quote is checked against the reused evidence as sent: found there, it keeps its confidence.
    assert (second.quote_status, second.confidence) == (QuoteStatus.VERIFIED, 5)
    assert "makes and sells packaged snacks" in world.llm.history[1].user
    stored = world.store.answers[("a.com", "food")]
    assert (stored.evidence_reused_from, stored.evidence_searched_at, stored.answered_at) == ("cpg", NOW, later)
    assert world.reuses("food") == 1 and world.reuses("cpg") == 0


async def test_evidence_reused_twice_keeps_its_first_search() -> None:
    world = World()
    await world.ask("cpg", "a.com", NOW)
    await world.ask("food", "a.com", NOW + timedelta(days=20))
    world.store.answers.pop(("a.com", "cpg"))  # only food's answer (cpg's evidence) is left to lend
    world.catalog["drinks"] = replace(FOOD, name="drinks")
    result = (await world.ask("drinks", "a.com", NOW + timedelta(days=29))).results[0]
    assert world.search.queries == ["a.com"]
    assert (result.evidence_reused_from, result.evidence_searched_at) == ("cpg", NOW)  # not food, not day 20
    # 31 days after cpg's search: food's answer is recent, but its evidence is not.
    world.store.answers.pop(("a.com", "drinks"))
    world.catalog["tea"] = replace(FOOD, name="tea")
    result = (await world.ask("tea", "a.com", NOW + timedelta(days=31))).results[0]
    assert world.search.queries == ["a.com", "a.com"] and result.evidence_reused_from is None
    result = (await world.ask("tea", "b.com", NOW)).results[0]  # (and never another domain's)
    assert world.search.queries[-1] == "b.com" and result.evidence_reused_from is None


async def test_evidence_older_than_the_reuse_age_is_searched_again() -> None:
    world = World(Settings(evidence_reuse_days=7))
    world.store.answers[("a.com", "cpg")] = stored_cpg_answer(age_days=8)
    result = (await world.ask("food", "a.com", NOW)).results[0]
    assert world.search.queries == ["a.com"] and result.evidence_reused_from is None
    assert result.search_provider == "homepage" and world.reuses("food") == 0

    world.store.answers[("b.com", "cpg")] = replace(stored_cpg_answer(age_days=6), domain="b.com")
    result = (await world.ask("food", "b.com", NOW)).results[0]
    assert world.search.queries == ["a.com"] and result.evidence_reused_from == "cpg"
    assert result.search_provider == "searxng"


async def test_a_reuse_age_of_zero_always_searches() -> None:
    world = World(Settings(evidence_reuse_days=0))
    world.store.answers[("a.com", "cpg")] = stored_cpg_answer(age_days=0)
    result = (await world.ask("food", "a.com", NOW)).results[0]
    assert world.search.queries == ["a.com"] and result.evidence_reused_from is None


@pytest.mark.parametrize("lender", [
    stored_cpg_answer(0, status=ResultStatus.FAILED, answer=None, confidence=None, error="LLM call failed"),
    stored_cpg_answer(0, source=Source.PRECHECK, answer=None, confidence=None, evidence=(), evidence_status=None,
                      site_status="parked"),
    stored_cpg_answer(0, evidence=(), evidence_status="none: homepage: answered HTTP 503", search_provider=None),
], ids=["failed", "precheck-ended", "no-evidence"])
async def test_failed_precheck_ended_or_evidence_less_answers_lend_nothing(lender: Answer) -> None:
    world = World()
    world.store.answers[("a.com", "cpg")] = lender
    result = (await world.ask("food", "a.com", NOW)).results[0]
    assert world.search.queries == ["a.com"] and result.evidence_reused_from is None


def test_get_shows_the_reused_evidence_as_its_openapi_schema_says(tmp_path: Path) -> None:
    cpg_file = resources.files("firmsift.classifiers").joinpath("cpg.toml").read_text(encoding="utf-8")
    (tmp_path / "food.toml").write_text(cpg_file.replace('name = "cpg"', 'name = "food"'), encoding="utf-8")
    world = World(Settings(wait_time=0.2, classifiers_dir=tmp_path, precheck=False))
    app = world.container.api(background=lambda: running_worker(world.container))

    def finished(client: TestClient, classifier: str) -> dict[str, object]:
        location = client.post("/domains/classify", json={"classifier": classifier, "domains": ["a.com"]}).headers[
            "location"]
        for _ in range(500):
            shown = client.get(location).json()
            if shown["status"] not in ("PENDING", "RUNNING"):
                return shown
            time.sleep(0.01)
        raise AssertionError("the job did not finish")

    with TestClient(app) as client:
        finished(client, "cpg")
        shown = finished(client, "food")
        schema = client.get("/openapi.json").json()["components"]["schemas"]["Result"]

    [result] = shown["results"]  # type: ignore[index]
    assert result["evidence_reused_from"] == "cpg" and result["evidence_status"] == "found"
    searched_at = datetime.fromisoformat(result["evidence_searched_at"])
    assert searched_at == world.store.answers[("a.com", "cpg")].answered_at
    assert set(result) == set(schema["required"]) == set(schema["properties"])
    assert world.search.queries == ["a.com"]
    job = world.store.jobs[shown["job_id"]]  # type: ignore[index]
    assert job_document(job) == shown
