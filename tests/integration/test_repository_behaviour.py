"""One repository suite, run against the in-memory store and the SQLite and PostgreSQL stores."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text, update

from firmsift.adapters.sql import migrations
from firmsift.adapters.sql.store import SqlStore
from firmsift.adapters.sql.tables import jobs
from firmsift.domain.model import (
    Answer,
    DomainResult,
    Evidence,
    Job,
    JobStatus,
    KnownCompany,
    QuoteStatus,
    ResultStatus,
    Source,
)
from firmsift.domain.outside_text import UnstorableText, storable
from firmsift.ports.infrastructure_errors import DatabaseFailure
from tests.support.databases import SQL_BACKENDS, migrated_engine
from tests.support.postgres import postgres_engine

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


def job(job_id: str = "j1", *domains: str) -> Job:
    return Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
               domains=domains or ("a.com", "b.com"), reply_queue="replies")


def answer(domain: str, **changes: object) -> Answer:
    values: dict[str, object] = dict(
        domain=domain, classifier="cpg", status=ResultStatus.DONE, answered_at=NOW, source=Source.LLM,
        answer=True, confidence=4, reason="Makes snacks.",
        evidence=(Evidence("https://a.com/about", "About", "snacks"),), raw_output='{"is_cpg": true}',
        model="m", prompt_version="v1", evidence_status="none: could not resolve host", search_provider="searxng",
        quote="Makes crisps and dips", quote_status=QuoteStatus.UNVERIFIED,
    )
    values.update(changes)
    return Answer(**values)  # type: ignore[arg-type]


async def test_a_new_job_has_every_domain_pending_in_order(store) -> None:
    await store.create_job(job("j1", "b.com", "a.com", "c.com"))
    stored = await store.get_job("j1")
    assert stored.status is JobStatus.PENDING and stored.reply_queue == "replies"
    assert stored.domains == ("b.com", "a.com", "c.com")
    assert [(r.domain, r.status) for r in stored.results] == [(d, ResultStatus.PENDING) for d in stored.domains]
    assert stored.created_at == NOW


async def test_jobs_created_together_read_as_jobs_created_alone(store) -> None:
    await store.create_jobs([job("j1", "b.com", "a.com"), job("j2", "c.com")])
    await store.create_job(job("j3", "b.com", "a.com"))
    together, alone = await store.get_job("j1"), await store.get_job("j3")
    assert replace(together, id="j3") == alone
    assert (await store.get_job("j2")).domains == ("c.com",)


async def test_jobs_created_together_are_all_stored_or_none(store) -> None:
    await store.create_job(job("j2"))
    with pytest.raises((ValueError, DatabaseFailure)):  # the memory store's refusal, the database's key violation
        await store.create_jobs([job("j1"), job("j2")])
    assert await store.get_job("j1") is None


async def test_unknown_job_is_none(store) -> None:
    assert await store.get_job("missing") is None


async def test_results_and_answers_round_trip(store) -> None:
    await store.create_job(job())
    given = answer("a.com")
    await store.save_result("j1", DomainResult.from_answer(given, Source.LLM), given)
    stored = await store.get_job("j1")
    assert stored.result_for("a.com") == DomainResult.from_answer(given, Source.LLM)
    assert stored.result_for("b.com").status is ResultStatus.PENDING
    assert (await store.get_answers(["a.com", "b.com"], "cpg")) == {"a.com": given}
    assert (await store.get_answers(["a.com"], "other")) == {}


async def test_forgotten_answers_are_gone_by_domain_by_source_and_by_classifier(store) -> None:
    precheck = dict(source=Source.PRECHECK, answer=None, confidence=None, site_status="no_dns", evidence=(),
                    prompt_version=None)
    domains = [f"d{n}.com" for n in range(2500)]  # more than one slice of the SQL adapter's IN lists
    await store.create_job(job("j1", *domains, "llm.com", "gone.com"))
    stored = [answer(d, **precheck) for d in domains] + [answer("llm.com"), answer("gone.com", **precheck),
                                                          answer("llm.com", classifier="other")]
    for given in stored:
        await store.save_result("j1", DomainResult.from_answer(given, given.source), given)
    assert await store.forget_answers("cpg", ["nobody.com"], only_precheck=False) == 0
    assert await store.forget_answers("cpg", ["gone.com", "llm.com"], only_precheck=True) == 1
    assert set(await store.get_answers(["gone.com", "llm.com"], "cpg")) == {"llm.com"}
    assert await store.forget_answers("cpg", domains, only_precheck=False) == 2500
    assert await store.forget_answers("cpg", None, only_precheck=False) == 1  # llm.com
    assert await store.get_answers(["llm.com"], "cpg") == {}
    assert set(await store.get_answers(["llm.com"], "other")) == {"llm.com"}  # another classifier's stays


@pytest.mark.parametrize("status", [*QuoteStatus, None])
async def test_every_quote_status_round_trips(store, status: QuoteStatus | None) -> None:
    await store.create_job(job())
    given = answer("a.com", quote=None if status is None else "Makes crisps and dips", quote_status=status)
    await store.save_result("j1", DomainResult.from_answer(given, Source.LLM), given)
    assert (await store.get_job("j1")).result_for("a.com") == DomainResult.from_answer(given, Source.LLM)
    assert (await store.get_answers(["a.com"], "cpg")) == {"a.com": given}


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_an_answer_stored_before_quotes_were_checked_reads_without_them(
        backend: str, tmp_path: Path) -> None:
    with migrated_engine(backend, tmp_path, to="0004") as engine:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO answers (domain, classifier, status, source, answer, confidence, reason, evidence,"
                " answered_at) VALUES ('a.com', 'cpg', 'DONE', 'llm', TRUE, 5, 'old', '[]', 1)")
        assert 5 in [m.version for m in migrations.upgrade(engine)]
        stored = (await SqlStore(engine).get_answers(["a.com"], "cpg"))["a.com"]
    assert (stored.confidence, stored.quote, stored.quote_status) == (5, None, None)


@pytest.mark.parametrize(("site_status", "redirected_to", "redirected_answer"), [
    ("parked", None, None), ("redirected", "parent-group.com", True), ("redirected", "parent-group.com", False),
    ("redirected", "parent-group.com", None), (None, None, None)])
async def test_the_precheck_findings_round_trip(store, site_status: str | None, redirected_to: str | None,
                                                redirected_answer: bool | None) -> None:
    given = Answer(domain="a.com", classifier="cpg", status=ResultStatus.DONE, answered_at=NOW,
                   source=Source.PRECHECK if site_status == "parked" else Source.LLM, reason="seen",
                   site_status=site_status, redirected_to=redirected_to, redirected_answer=redirected_answer)
    await store.create_job(job("j1", "a.com"))
    assert await store.save_result("j1", DomainResult.from_answer(given, given.source), given)
    assert (await store.get_answers(["a.com"], "cpg"))["a.com"] == given
    assert (await store.get_job("j1")).results[0] == DomainResult.from_answer(given, given.source)


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_rows_stored_before_the_precheck_read_without_its_findings(
        backend: str, tmp_path: Path) -> None:
    with migrated_engine(backend, tmp_path, to="0005") as engine:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO answers (domain, classifier, status, source, answer, confidence, reason, evidence,"
                " answered_at) VALUES ('a.com', 'cpg', 'DONE', 'llm', TRUE, 5, 'old', '[]', 1)")
        assert 6 in [m.version for m in migrations.upgrade(engine)]
        stored = (await SqlStore(engine).get_answers(["a.com"], "cpg"))["a.com"]
    assert (stored.site_status, stored.redirected_to, stored.redirected_answer) == (None, None, None)


async def test_answers_upsert_on_domain_and_classifier(store) -> None:
    await store.create_job(job())
    for attempt in (answer("a.com", confidence=2), answer("a.com", status=ResultStatus.FAILED, answer=None,
                                                           confidence=None, error="boom")):
        await store.save_result("j1", DomainResult.from_answer(attempt, Source.LLM), attempt)
    stored = (await store.get_answers(["a.com"], "cpg"))["a.com"]
    assert stored.status is ResultStatus.FAILED and stored.error == "boom" and stored.answer is None


async def test_concurrent_upserts_of_one_domain_leave_one_row(store) -> None:
    for n in range(5):
        await store.create_job(job(f"j{n}", "same.com"))
    await asyncio.gather(*(
        store.save_result(f"j{n}", DomainResult.from_answer(answer("same.com", confidence=1 + n), Source.LLM),
                          answer("same.com", confidence=1 + n))
        for n in range(5)
    ))
    stored = await store.get_answers(["same.com"], "cpg")
    assert list(stored) == ["same.com"]


async def test_job_status_and_reply_are_recorded(store) -> None:
    await store.create_job(job())
    await store.set_job_status("j1", JobStatus.FAILED, error="dead-lettered")
    await store.record_reply("j1", sent=False, error="queue missing")
    stored = await store.get_job("j1")
    assert (stored.status, stored.error, stored.reply_sent, stored.reply_error) == (
        JobStatus.FAILED, "dead-lettered", False, "queue missing")
    await store.record_reply("j1", sent=True, error=None)
    assert (await store.get_job("j1")).reply_sent is True


async def test_known_companies_upsert_idempotently(store) -> None:
    assert await store.upsert_known([KnownCompany("a.com", "A"), KnownCompany("b.com", "")]) == 2
    assert await store.upsert_known([KnownCompany("a.com", "A Inc")]) == 1
    found = await store.find_known(["a.com", "b.com", "c.com"])
    assert found == {"a.com": KnownCompany("a.com", "A Inc"), "b.com": KnownCompany("b.com", "")}
    assert await store.find_known([]) == {}


@pytest.mark.parametrize("poison", ["\x00", "\ud800"])
@pytest.mark.parametrize("field", ["raw_output", "reason", "evidence", "evidence_status", "quote"])
async def test_an_unstorable_text_is_refused_with_nothing_written(store, poison: str, field: str) -> None:
    await store.create_job(job())
    changes = ({"evidence": (Evidence("https://a.com/", f"About{poison}"),)} if field == "evidence"
               else {field: f"text{poison}"})
    bad = answer("a.com", **changes)
    with pytest.raises(UnstorableText, match="a.com"):
        await store.save_result("j1", DomainResult.from_answer(bad, Source.LLM), bad)
    assert (await store.get_job("j1")).result_for("a.com").status is ResultStatus.PENDING
    assert await store.get_answers(["a.com"], "cpg") == {}


async def test_a_status_change_can_be_conditional(store) -> None:
    await store.create_job(job())
    assert await store.set_job_status("j1", JobStatus.RUNNING, only_from=(JobStatus.PENDING, JobStatus.RUNNING))
    assert await store.set_job_status("j1", JobStatus.FAILED, error="dead-lettered",
                                      only_from=(JobStatus.PENDING, JobStatus.RUNNING))
    assert not await store.set_job_status("j1", JobStatus.DONE, only_from=(JobStatus.RUNNING,))
    stored = await store.get_job("j1")
    assert (stored.status, stored.error) == (JobStatus.FAILED, "dead-lettered")
    assert await store.set_job_status("j1", JobStatus.PENDING)  # unconditional, as before


@pytest.mark.parametrize("final", [JobStatus.FAILED, JobStatus.DONE])
async def test_a_finished_job_keeps_its_results_but_the_answer_is_cached(store, final: JobStatus) -> None:
    await store.create_job(job())
    await store.set_job_status("j1", final)
    late = answer("a.com")
    assert await store.save_result("j1", DomainResult.from_answer(late, Source.LLM), late) is False
    assert (await store.get_job("j1")).result_for("a.com").status is ResultStatus.PENDING
    assert (await store.get_answers(["a.com"], "cpg")) == {"a.com": late}  # paid for: kept for the next job
    await store.set_job_status("j1", JobStatus.RUNNING)  # redriven
    assert await store.save_result("j1", DomainResult.from_answer(late, Source.CACHE), None) is True


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_rows_written_before_search_providers_were_recorded_read_as_none(
        backend: str, tmp_path: Path) -> None:
    with migrated_engine(backend, tmp_path, to="0003") as engine:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO answers (domain, classifier, status, source, answer, confidence, reason, "
                              "evidence, answered_at) VALUES ('a.com', 'cpg', 'DONE', 'llm', TRUE, 4, 'old', '[]', 0)"))
            conn.execute(text("INSERT INTO jobs (id, classifier, status, created_at, updated_at) "
                              "VALUES ('j1', 'cpg', 'DONE', 0, 0)"))
            conn.execute(text("INSERT INTO job_domains (job_id, position, domain, status, source, answer, confidence) "
                              "VALUES ('j1', 0, 'a.com', 'DONE', 'llm', TRUE, 4)"))
        assert [m.version for m in migrations.upgrade(engine)][0] == 4
        store = SqlStore(engine)
        old = (await store.get_answers(["a.com"], "cpg"))["a.com"]
        assert (old.reason, old.search_provider) == ("old", None)
        assert (await store.get_job("j1")).result_for("a.com").search_provider is None


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_a_save_racing_the_write_that_finishes_the_job_waits_for_it(backend: str, tmp_path: Path) -> None:
    """The dead-letter drain marks a job FAILED in a transaction while a late delivery saves a
    result: the save must see the committed FAILED (and leave the job alone), not the RUNNING
    it would read from before that transaction committed."""
    with migrated_engine(backend, tmp_path) as engine:
        store = SqlStore(engine)
        await store.create_job(job())
        await store.set_job_status("j1", JobStatus.RUNNING)
        late = answer("a.com")
        with engine.connect() as drain:
            drain.execute(update(jobs).where(jobs.c.id == "j1").values(status=JobStatus.FAILED.value))
            saving = asyncio.create_task(store.save_result("j1", DomainResult.from_answer(late, Source.LLM), late))
            await asyncio.sleep(0.5)
            assert not saving.done()  # waiting for the drain's transaction
            drain.commit()
        assert await saving is False
        assert (await store.get_job("j1")).result_for("a.com").status is ResultStatus.PENDING
        assert "a.com" in await store.get_answers(["a.com"], "cpg")


async def test_what_the_database_itself_refuses_is_unstorable_with_nothing_written() -> None:
    """A legacy LATIN1 PostgreSQL database cannot hold an em dash, which models write often:
    the store passes its own check, the database refuses, and the caller gets UnstorableText."""
    with postgres_engine(encoding="LATIN1") as engine:
        store = SqlStore(engine)
        await store.create_job(job())
        bad = answer("a.com", reason="Makes snacks \N{EM DASH} and drinks.")
        with pytest.raises(UnstorableText, match="database refused the result of a.com"):
            await store.save_result("j1", DomainResult.from_answer(bad, Source.LLM), bad)
        assert (await store.get_job("j1")).result_for("a.com").status is ResultStatus.PENDING
        assert await store.get_answers(["a.com"], "cpg") == {}
        fine = answer("a.com", reason="Makes snacks - and drinks, é.")
        assert await store.save_result("j1", DomainResult.from_answer(fine, Source.LLM), fine) is True


@pytest.mark.parametrize("backend", SQL_BACKENDS)
def test_any_text_made_storable_is_stored_and_read_back_unchanged(backend: str, tmp_path: Path) -> None:
    """The cleaning rule is exactly what the databases need: over all of Unicode (surrogates and
    NUL included), what `storable` returns passes the store's check, is written and reads back."""
    with migrated_engine(backend, tmp_path) as engine:
        store = SqlStore(engine)
        asyncio.run(store.create_job(job("j1", *(f"d{n}.com" for n in range(100)))))
        used = iter(range(100))

        @settings(max_examples=60, deadline=None)
        @given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=50))
        def round_trip(text: str) -> None:
            domain = f"d{next(used)}.com"
            clean = storable(text)
            given_answer = answer(domain, reason=clean, raw_output=clean,
                                  evidence=(Evidence(f"https://{domain}/{clean}", clean, clean),))
            asyncio.run(store.save_result("j1", DomainResult.from_answer(given_answer, Source.LLM), given_answer))
            assert asyncio.run(store.get_answers([domain], "cpg"))[domain] == given_answer

        round_trip()
