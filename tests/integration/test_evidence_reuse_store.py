"""recent_evidence, and the reused-evidence fields of answers and results, on the in-memory,
SQLite and PostgreSQL stores: one suite, every backend."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import text

from firmsift.adapters.sql import migrations
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.evidence_status import FOUND, NOTHING_FOUND
from firmsift.domain.model import Answer, DomainResult, Evidence, Job, JobStatus, ResultStatus, Source
from tests.support.databases import SQL_BACKENDS, migrated_engine

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
SINCE = NOW - timedelta(days=30)


def answer(classifier: str, age_days: float = 1, domain: str = "a.com", **changes: object) -> Answer:
    values: dict[str, object] = dict(
        domain=domain, classifier=classifier, status=ResultStatus.DONE, answered_at=NOW - timedelta(days=age_days),
        source=Source.LLM, answer=True, confidence=4, reason="r",
        evidence=(Evidence(f"https://{domain}/", f"{classifier} title", "snippet"),),
        evidence_status=FOUND, search_provider="homepage",
    )
    values.update(changes)
    return Answer(**values)  # type: ignore[arg-type]


async def put(store, *answers: Answer) -> None:  # type: ignore[no-untyped-def]
    for stored in answers:
        job_id = f"{stored.classifier}:{stored.domain}"
        await store.create_job(Job(id=job_id, classifier=stored.classifier, status=JobStatus.PENDING,
                                   created_at=NOW, domains=(stored.domain,)))
        await store.save_result(job_id, DomainResult.from_answer(stored, Source.LLM), stored)


async def test_the_most_recently_searched_evidence_of_another_classifier_is_found(store) -> None:
    await put(store, answer("b2b", age_days=3), answer("saas", age_days=2), answer("cpg", age_days=0))
    found = await store.recent_evidence("a.com", "cpg", SINCE)
    assert found is not None and found.classifier == "saas"  # never the classifier's own answer
    assert found.evidence == (Evidence("https://a.com/", "saas title", "snippet"),)
    assert found.search_provider == "homepage" and found.answered_at == NOW - timedelta(days=2)


async def test_evidence_searched_before_the_age_is_not_found(store) -> None:
    await put(store, answer("b2b", age_days=31))
    assert await store.recent_evidence("a.com", "cpg", SINCE) is None
    await put(store, answer("saas", age_days=29))
    assert (await store.recent_evidence("a.com", "cpg", SINCE)).classifier == "saas"


@pytest.mark.parametrize("lender", [
    answer("b2b", status=ResultStatus.FAILED, error="LLM call failed"),
    answer("b2b", source=Source.PRECHECK, evidence=(), evidence_status=None, site_status="parked"),
    answer("b2b", evidence=(), evidence_status=NOTHING_FOUND, search_provider=None),
    answer("b2b", evidence_status="none: searxng: HTTP 503"),
    answer("b2b", evidence=(), evidence_status=FOUND),
    answer("b2b", domain="shop.a.com"),  # another domain, even a subdomain
], ids=["failed", "precheck", "nothing-found", "search-failed", "empty", "other-domain"])
async def test_only_an_llm_answer_on_found_evidence_of_the_same_domain_lends_it(store, lender: Answer) -> None:
    await put(store, lender)
    assert await store.recent_evidence("a.com", "cpg", SINCE) is None


async def test_reused_evidence_counts_from_its_first_search(store) -> None:
    # saas answered yesterday on b2b's evidence searched 40 days ago: too old to lend now.
    await put(store, answer("saas", age_days=1, evidence_reused_from="b2b",
                            evidence_searched_at=NOW - timedelta(days=40)))
    assert await store.recent_evidence("a.com", "cpg", SINCE) is None
    assert await store.recent_evidence("a.com", "cpg", NOW - timedelta(days=41)) is not None


async def test_reuse_fields_round_trip_on_answers_and_results(store) -> None:
    searched = NOW - timedelta(days=5, seconds=0.25)
    reused = answer("cpg", evidence_reused_from="b2b", evidence_searched_at=searched)
    await put(store, reused, answer("plain"))
    stored = (await store.get_answers(["a.com"], "cpg"))["a.com"]
    assert (stored.evidence_reused_from, stored.evidence_searched_at) == ("b2b", searched)
    result = (await store.get_job("cpg:a.com")).result_for("a.com")
    assert (result.evidence_reused_from, result.evidence_searched_at) == ("b2b", searched)
    plain = (await store.get_answers(["a.com"], "plain"))["a.com"]
    assert (plain.evidence_reused_from, plain.evidence_searched_at) == (None, None)
    assert (await store.get_job("plain:a.com")).result_for("a.com").evidence_reused_from is None


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_migration_10_applies_over_stored_rows_and_old_answers_lend_their_evidence(
        backend: str, tmp_path: Path) -> None:
    with migrated_engine(backend, tmp_path) as engine:
        migrations.downgrade(engine, "0009")  # a database from before revision 10
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO answers (domain, classifier, status, source, answer, confidence, reason, "
                              "evidence, answered_at, evidence_status) VALUES ('a.com', 'b2b', 'DONE', 'llm', TRUE, 4, "
                              "'old', '[{\"url\": \"https://a.com/\", \"title\": \"A\", \"snippet\": \"s\"}]', "
                              f"{(NOW - timedelta(days=2)).timestamp()}, 'found')"))
        assert [m.version for m in migrations.upgrade(engine)][0] == 10
        lent = await SqlStore(engine).recent_evidence("a.com", "cpg", SINCE)
        assert lent is not None and lent.classifier == "b2b" and lent.evidence_reused_from is None
