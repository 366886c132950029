"""SQLAlchemy store of economy mode (SQLite and PostgreSQL): the questions waiting for the
provider's batch API, the jobs waiting for their answers, and the provider batches they went in."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, Select, delete, exists, select, text, update

from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.store import UPSERT_ANSWER
from firmsift.adapters.sql.store_rows import answer_params, stored_answer
from firmsift.adapters.sql.tables import (
    answers,
    batch_jobs,
    batches,
    deferred_question_jobs,
    deferred_questions,
    jobs,
    provider_batches,
)
from firmsift.domain.batches import BATCH_CANCELLED_RUNNING, BATCH_CANCELLED_WAITING
from firmsift.domain.economy import BatchMode, DeferredQuestion, Deferral, ProviderBatch, ProviderBatchStatus, Question
from firmsift.domain.model import Answer, JobStatus, ResultStatus, Source

# Targets the primary key deferred_questions (domain, classifier): a question already waiting is
# kept as it is, so two jobs never send the same question. A no-op update rather than DO NOTHING:
# it locks the row (PostgreSQL) until the job's waiter is written, so a transaction forgetting the
# questions nobody waits for (a cancel, or the check before an upload) waits and sees the waiter.
DEFER_QUESTION = text("""
    INSERT INTO deferred_questions (domain, classifier, question, template, attempts, provider_batch, deferred_at)
    VALUES (:domain, :classifier, :question, :template, 0, NULL, :now)
    ON CONFLICT (domain, classifier) DO UPDATE SET deferred_at = deferred_questions.deferred_at
""")
# Targets the primary key deferred_question_jobs (domain, classifier, job_id): a redelivered job waits once.
ADD_WAITER = text("""
    INSERT INTO deferred_question_jobs (domain, classifier, job_id, since)
    VALUES (:domain, :classifier, :job_id, :now)
    ON CONFLICT (domain, classifier, job_id) DO NOTHING
""")
# A question's waiters, for `exists()` in a statement on deferred_questions.
_ITS_WAITERS = (deferred_question_jobs.c.domain == deferred_questions.c.domain,
                deferred_question_jobs.c.classifier == deferred_questions.c.classifier)


class SqlDeferredQuestions:
    """Implements ports.economy.DeferredQuestions."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    async def _run(self, work: Callable[[Connection], Any]) -> Any:
        return await in_transaction(self.engine, work)

    async def deferral(self, job_id: str) -> Deferral | None:
        query = (select(batches.c.mode, batches.c.refresh).join(batch_jobs, batch_jobs.c.batch_id == batches.c.id)
                 .where(batch_jobs.c.job_id == job_id))
        row = await self._run(lambda conn: conn.execute(query).first())
        return Deferral(refresh=bool(row.refresh)) if row is not None and row.mode == BatchMode.ECONOMY.value else None

    async def stale_answers(self, classifier: str, answered_before: datetime, limit: int) -> list[str]:
        query = (select(answers.c.domain)
                 .where(answers.c.classifier == classifier, answers.c.source == Source.LLM.value,
                        answers.c.status == ResultStatus.DONE.value,
                        answers.c.answered_at < answered_before.timestamp())
                 .order_by(answers.c.answered_at, answers.c.domain).limit(limit))
        return await self._run(lambda conn: list(conn.execute(query).scalars()))

    async def defer(self, question: DeferredQuestion, job_id: str) -> bool:
        key = {"domain": question.template.domain, "classifier": question.template.classifier, "now": self.clock()}
        its_batch = batches.c.id.in_(select(batch_jobs.c.batch_id).where(batch_jobs.c.job_id == job_id))

        def work(conn: Connection) -> bool:
            # FOR SHARE on the batch's row, then the job's (a cancel's order: no deadlock): a cancel
            # under way is waited for and seen here, and one that comes after waits for this
            # waiter and withdraws it. Either way nothing is sent for a cancelled batch.
            cancelled = conn.execute(
                select(batches.c.cancelled_at).where(its_batch).with_for_update(read=True)).scalar()
            if cancelled is not None:
                # Cancelled by a version that left running jobs alone: the job ends as cancelled now.
                conn.execute(update(jobs).where(jobs.c.id == job_id, jobs.c.status == JobStatus.RUNNING.value)
                             .values(status=JobStatus.FAILED.value, error=BATCH_CANCELLED_RUNNING,
                                     updated_at=time.time()))
                return False
            status = conn.execute(select(jobs.c.status).where(jobs.c.id == job_id).with_for_update(read=True)).scalar()
            if status is None or JobStatus(status).finished:
                return False
            conn.execute(DEFER_QUESTION, {**key, "question": json.dumps(_question_json(question.question)),
                                          "template": json.dumps(answer_params(question.template))})
            conn.execute(ADD_WAITER, {**key, "job_id": job_id})
            return True

        return await self._run(work)

    async def unsent(self, limit: int) -> list[DeferredQuestion]:
        query = (select(deferred_questions).where(deferred_questions.c.provider_batch.is_(None))
                 .order_by(deferred_questions.c.deferred_at).limit(limit))
        return await self._run(lambda conn: [_deferred(row) for row in conn.execute(query).mappings()])

    async def record_provider_batch(self, batch: ProviderBatch, questions: Sequence[DeferredQuestion]) -> None:
        def work(conn: Connection) -> None:
            conn.execute(provider_batches.insert().values(id=batch.id, created_at=self.clock(), **_batch_values(batch)))
            for question in questions:
                conn.execute(update(deferred_questions).where(*_key(question)).values(provider_batch=batch.id))

        await self._run(work)

    async def forget_unwaited(self, provider_batch_id: str) -> None:
        in_batch = deferred_questions.c.provider_batch == provider_batch_id

        def work(conn: Connection) -> None:
            # Locked, then read afresh by the next statement (PostgreSQL): a job deferring one of
            # these questions right now holds its row until its waiter is written, and is seen.
            conn.execute(select(deferred_questions.c.domain).where(in_batch).with_for_update())
            conn.execute(delete(deferred_questions).where(in_batch, ~exists().where(*_ITS_WAITERS)))

        await self._run(work)

    async def update_provider_batch(self, batch: ProviderBatch) -> None:
        await self._run(lambda conn: conn.execute(
            update(provider_batches).where(provider_batches.c.id == batch.id).values(**_batch_values(batch))))

    async def provider_batches_in_flight(self) -> list[ProviderBatch]:
        query = (select(provider_batches).where(provider_batches.c.closed_at.is_(None))
                 .order_by(provider_batches.c.created_at))
        return await self._run(lambda conn: [_provider_batch(row) for row in conn.execute(query).mappings()])

    async def questions_in(self, provider_batch_id: str) -> list[DeferredQuestion]:
        query = (select(deferred_questions).where(deferred_questions.c.provider_batch == provider_batch_id)
                 .order_by(deferred_questions.c.deferred_at))
        return await self._run(lambda conn: [_deferred(row) for row in conn.execute(query).mappings()])

    async def waiting_jobs(self, question: DeferredQuestion) -> list[str]:
        return await self._run(lambda conn: _waiters(conn, question))

    async def answered(self, question: DeferredQuestion, answer: Answer, given: Sequence[str]) -> list[str]:
        def work(conn: Connection) -> list[str]:
            # Locked before its waiters are read (PostgreSQL): a job deferring it right now is
            # among them, not left waiting for a question that is gone.
            conn.execute(select(deferred_questions.c.domain).where(*_key(question)).with_for_update())
            late = [job_id for job_id in _waiters(conn, question) if job_id not in given]
            conn.execute(UPSERT_ANSWER, answer_params(answer))
            conn.execute(delete(deferred_question_jobs).where(
                deferred_question_jobs.c.domain == question.template.domain,
                deferred_question_jobs.c.classifier == question.template.classifier))
            conn.execute(delete(deferred_questions).where(*_key(question)))
            return late

        return await self._run(work)

    async def send_again(self, question: DeferredQuestion, *, count: bool = True) -> None:
        await self._run(lambda conn: conn.execute(update(deferred_questions).where(*_key(question)).values(
            provider_batch=None, attempts=deferred_questions.c.attempts + (1 if count else 0))))

    async def close_provider_batch(self, batch: ProviderBatch) -> None:
        await self._run(lambda conn: conn.execute(
            update(provider_batches).where(provider_batches.c.id == batch.id).values(closed_at=self.clock())))


def withdraw_waiting_jobs(conn: Connection, job_ids: Select[Any]) -> int:
    """In the caller's transaction (a batch's cancel): fail each RUNNING job of `job_ids` that waits
    for the provider's batch API, take every job of `job_ids` off the waiters, and forget each
    question they waited for that no job waits for any more and that is in no provider batch
    yet (one already sent is answered into the cache, as it is paid for). The jobs failed."""
    waiting = deferred_question_jobs.c.job_id.in_(job_ids)
    failed = conn.execute(
        update(jobs).where(jobs.c.id.in_(select(deferred_question_jobs.c.job_id).where(waiting)),
                           jobs.c.status == JobStatus.RUNNING.value)
        .values(status=JobStatus.FAILED.value, error=BATCH_CANCELLED_WAITING, updated_at=time.time())).rowcount
    # Before the waiters go: an unsent question that one of these jobs waits for and no other job
    # does. Locked first, then read afresh by the delete (PostgreSQL): another batch's job deferring
    # the same question right now holds its row until its waiter is written, and is seen.
    theirs = (deferred_questions.c.provider_batch.is_(None), exists().where(*_ITS_WAITERS, waiting))
    conn.execute(select(deferred_questions.c.domain).where(*theirs).with_for_update())
    conn.execute(delete(deferred_questions).where(*theirs, ~exists().where(*_ITS_WAITERS, ~waiting)))
    conn.execute(delete(deferred_question_jobs).where(waiting))
    return failed


def _waiters(conn: Connection, question: DeferredQuestion) -> list[str]:
    query = (select(deferred_question_jobs.c.job_id)
             .where(deferred_question_jobs.c.domain == question.template.domain,
                    deferred_question_jobs.c.classifier == question.template.classifier)
             .order_by(deferred_question_jobs.c.since, deferred_question_jobs.c.job_id))
    return list(conn.execute(query).scalars())


def _key(question: DeferredQuestion) -> tuple[Any, Any]:
    return (deferred_questions.c.domain == question.template.domain,
            deferred_questions.c.classifier == question.template.classifier)


def _question_json(question: Question) -> dict[str, Any]:
    return {"system": question.system, "user": question.user, "json_schema": question.json_schema,
            "marker": question.marker}


def _deferred(row: Any) -> DeferredQuestion:
    asked = json.loads(row["question"])
    question = Question(asked["system"], asked["user"], asked["json_schema"], asked["marker"])
    return DeferredQuestion(question, stored_answer(json.loads(row["template"])), attempts=row["attempts"])


def _batch_values(batch: ProviderBatch) -> dict[str, Any]:
    return {"status": batch.status.value, "input_file_id": batch.input_file_id, "batch_id": batch.batch_id,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id}


def _provider_batch(row: Any) -> ProviderBatch:
    return ProviderBatch(id=row["id"], status=ProviderBatchStatus(row["status"]), input_file_id=row["input_file_id"],
                         batch_id=row["batch_id"], output_file_id=row["output_file_id"],
                         error_file_id=row["error_file_id"])
