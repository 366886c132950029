"""What a classifier's stored LLM answers used (the dry run's history): tokens and latency, the
same on the in-memory, SQLite and PostgreSQL stores, and migration 11 on rows stored before it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import text

from firmsift.adapters.sql import migrations
from firmsift.adapters.sql.answer_history import SqlAnswerHistory
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.estimates import LATENCY_SAMPLES, LatencyHistory, TokenHistory
from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, ResultStatus, Source
from tests.support.databases import SQL_BACKENDS, migrated_engine

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def stores(backend_container) -> tuple[object, object]:  # noqa: ANN001
    """(the store answers are saved to, the history read from it), on each backend."""
    return backend_container.store(), backend_container.answer_history()


def answer(domain: str, *, classifier: str = "cpg", source: Source = Source.LLM, age: float = 0,
           tokens: tuple[int | None, int | None] = (None, None),
           seconds: tuple[float | None, float | None] = (None, None),
           status: ResultStatus = ResultStatus.DONE) -> Answer:
    return Answer(domain=domain, classifier=classifier, status=status, answered_at=NOW - timedelta(seconds=age),
                  source=source, answer=True, confidence=5, tokens_in=tokens[0], tokens_out=tokens[1],
                  llm_seconds=seconds[0], evidence_seconds=seconds[1])


async def save(store, *items: Answer) -> None:
    await store.create_job(Job(id="j1", classifier="cpg", status=JobStatus.PENDING, created_at=NOW,
                               domains=tuple(item.domain for item in items)))
    for item in items:
        await store.save_result("j1", DomainResult.from_answer(item, item.source), item)


async def test_the_token_history_averages_the_llm_answers_that_report_both_counts(stores) -> None:
    store, history = stores
    await save(store, answer("a.com", tokens=(1000, 80)), answer("b.com", tokens=(1003, 90)),
               answer("c.com", tokens=(None, 90)), answer("d.com", tokens=(1000, None)),
               answer("e.com", source=Source.PRECHECK, tokens=(1, 1)),
               answer("f.com", classifier="other", tokens=(9999, 9999)))
    found = await history.token_history("cpg")
    assert (found.answers, found.tokens_in, found.tokens_out) == (2, 1001.5, 85.0)
    assert await history.token_history("none") == TokenHistory()


async def test_an_answers_latency_round_trips(stores) -> None:
    store, _ = stores
    timed = answer("a.com", seconds=(2.345, 0.012))
    untimed = answer("b.com", source=Source.PRECHECK)
    await save(store, timed, untimed)
    assert await store.get_answers(["a.com", "b.com"], "cpg") == {"a.com": timed, "b.com": untimed}


async def test_the_latency_history_is_the_mean_of_the_latest_timed_llm_answers(stores) -> None:
    store, history = stores
    # The latest LATENCY_SAMPLES timed answers are 1 s calls (a failed one counts: it held its slot);
    # older ones, untimed ones, other paths and other classifiers are not counted.
    latest = [answer(f"new{i}.com", age=i, seconds=(1.0, 0.5 if i % 2 else None),
                     status=ResultStatus.FAILED if i == 0 else ResultStatus.DONE) for i in range(LATENCY_SAMPLES)]
    await save(store, *latest, answer("old.com", age=LATENCY_SAMPLES + 1, seconds=(500.0, 500.0)),
               answer("untimed.com", age=-1), answer("check.com", source=Source.PRECHECK, age=-1, seconds=(90.0, 0)),
               answer("other.com", classifier="other", age=-1, seconds=(90.0, 0)))
    assert await history.latency_history("cpg") == LatencyHistory(LATENCY_SAMPLES, 1.0, 0.25)
    assert await history.latency_history("other") == LatencyHistory(1, 90.0, 0.0)
    assert await history.latency_history("none") == LatencyHistory()


@pytest.mark.parametrize("backend", SQL_BACKENDS)
async def test_rows_stored_before_migration_11_read_as_unmeasured(
        backend: str, tmp_path: Path) -> None:
    with migrated_engine(backend, tmp_path, to="0010") as engine:
        with engine.begin() as conn:
            conn.execute(text("INSERT INTO answers (domain, classifier, status, source, answer, confidence, reason, "
                              "evidence, answered_at) VALUES ('a.com', 'cpg', 'DONE', 'llm', TRUE, 4, 'old', '[]', 0)"))
        assert [m.name for m in migrations.upgrade(engine) if m.version == 11] == ["latency_and_pauses"]
        old = (await SqlStore(engine).get_answers(["a.com"], "cpg"))["a.com"]
        assert (old.llm_seconds, old.evidence_seconds) == (None, None)
        assert await SqlAnswerHistory(engine).latency_history("cpg") == LatencyHistory()
