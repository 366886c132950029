"""SQLAlchemy repository for SQLite and PostgreSQL: jobs, per-job results, answers, known companies.

Queries are synchronous SQLAlchemy Core run off the event loop in a worker thread.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from typing import TypeVar

from sqlalchemy import Connection, Engine, TextClause, delete, func, select, text, update
from sqlalchemy.exc import DataError

from firmsift.adapters.sql.bulk_insert import insert_rows
from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.store_rows import (NO_PAUSE, PENDING_DOMAIN_COLUMNS, answer_params, batch_domains_text,
                                              domain_result, epoch_time, job_pause, job_row, listed_domains,
                                              pause_values, pending_domain_rows, pending_domain_values, result_values,
                                              stored_answer)
from firmsift.adapters.sql.tables import answers, job_domains, jobs, known_companies
from firmsift.domain.budgets import JobPause
from firmsift.domain.evidence_status import FOUND
from firmsift.domain.idempotency import IdempotencyKeyTaken
from firmsift.domain.model import (
    Answer,
    DomainResult,
    Job,
    JobStatus,
    KnownCompany,
    ResultStatus,
    Source,
)
from firmsift.domain.outside_text import UnstorableText, check_storable, storable_error

T = TypeVar("T")
_UNWRITTEN = dict.fromkeys(job_domains.c.keys())  # a job_domains row's columns, all NULL

# Targets the primary key answers (domain, classifier): a repeat overwrites instead of duplicating.
UPSERT_ANSWER = text("""
    INSERT INTO answers (domain, classifier, status, source, answer, confidence, reason, evidence,
                         error, raw_output, model, prompt_version, answered_at, evidence_status,
                         search_provider, quote, quote_status, site_status, redirected_to,
                         redirected_answer, tokens_in, tokens_out, cost_usd, evidence_reused_from,
                         evidence_searched_at, llm_seconds, evidence_seconds)
    VALUES (:domain, :classifier, :status, :source, :answer, :confidence, :reason, :evidence,
            :error, :raw_output, :model, :prompt_version, :answered_at, :evidence_status,
            :search_provider, :quote, :quote_status, :site_status, :redirected_to, :redirected_answer,
            :tokens_in, :tokens_out, :cost_usd, :evidence_reused_from, :evidence_searched_at, :llm_seconds,
            :evidence_seconds)
    ON CONFLICT (domain, classifier) DO UPDATE SET
        status = excluded.status, source = excluded.source, answer = excluded.answer,
        confidence = excluded.confidence, reason = excluded.reason, evidence = excluded.evidence,
        error = excluded.error, raw_output = excluded.raw_output, model = excluded.model,
        prompt_version = excluded.prompt_version, answered_at = excluded.answered_at,
        evidence_status = excluded.evidence_status, search_provider = excluded.search_provider,
        quote = excluded.quote, quote_status = excluded.quote_status,
        site_status = excluded.site_status, redirected_to = excluded.redirected_to,
        redirected_answer = excluded.redirected_answer, tokens_in = excluded.tokens_in,
        tokens_out = excluded.tokens_out, cost_usd = excluded.cost_usd,
        evidence_reused_from = excluded.evidence_reused_from, evidence_searched_at = excluded.evidence_searched_at,
        llm_seconds = excluded.llm_seconds, evidence_seconds = excluded.evidence_seconds
""")

# Targets the unique index ix_jobs_owner_idempotency_key (owner, idempotency_key): a second job
# with an owner's key is not written (NULL keys never conflict). Under concurrency the database
# decides: a competing insert waits for the first transaction and then finds its row.
INSERT_JOB = text("""
    INSERT INTO jobs (id, classifier, status, reply_queue, created_at, updated_at, error, reply_sent,
                      owner, idempotency_key)
    VALUES (:id, :classifier, :status, :reply_queue, :created_at, :updated_at, :error, :reply_sent,
            :owner, :idempotency_key)
    ON CONFLICT (owner, idempotency_key) DO NOTHING
""")

# Targets the primary key known_companies (domain): importing the same file twice is harmless.
UPSERT_KNOWN = text("""
    INSERT INTO known_companies (domain, name, imported_at) VALUES (:domain, :name, :imported_at)
    ON CONFLICT (domain) DO UPDATE SET name = excluded.name, imported_at = excluded.imported_at
""")


class SqlStore:
    """Implements JobRepository, AnswerStore and KnownCompanies on one SQLAlchemy engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _run(self, work: Callable[[Connection], T]) -> T:
        return await in_transaction(self.engine, work)

    async def create_job(self, job: Job) -> None:
        await self._run(lambda conn: self.insert_job_in(conn, job))

    async def create_jobs(self, jobs: Collection[Job]) -> None:
        await self._run(lambda conn: self.insert_jobs_in(conn, jobs))

    def insert_job_in(self, conn: Connection, job: Job) -> None:
        """Write the job and its domains (every one PENDING) as one step of the caller's open
        transaction, so they commit or roll back together with the caller's other rows.
        IdempotencyKeyTaken, with nothing written, if the owner already used the job's key."""
        written = conn.execute(INSERT_JOB, job_row(job)).rowcount
        if written == 0:
            earlier_id = conn.execute(select(jobs.c.id).where(
                jobs.c.owner == job.owner, jobs.c.idempotency_key == job.idempotency_key)).scalar_one()
            earlier = _job_in(conn, earlier_id)
            assert earlier is not None  # the row the insert just collided with, read in the same transaction
            raise IdempotencyKeyTaken(earlier)
        conn.execute(job_domains.insert(), pending_domain_rows(job.id, job.domains))

    def insert_jobs_in(self, conn: Connection, new_jobs: Collection[Job]) -> None:
        """Write many new jobs without an idempotency key (a batch's, so nothing can conflict),
        as insert_job_in would one by one, in two statements."""
        if any(job.idempotency_key is not None for job in new_jobs):
            raise ValueError("insert_jobs_in writes jobs without an idempotency key; use insert_job_in")
        job_rows = [job_row(job) for job in new_jobs]
        if job_rows:
            insert_rows(conn, jobs, list(job_rows[0]), [tuple(row.values()) for row in job_rows])
        insert_rows(conn, job_domains, PENDING_DOMAIN_COLUMNS,
                    [values for job in new_jobs for values in pending_domain_values(job.id, job.domains)])

    def insert_batch_jobs_in(self, conn: Connection, new_jobs: Collection[Job]) -> None:
        """Write a batch's new jobs (without an idempotency key) in one statement, each listing its
        domains in jobs.batch_domains instead of a PENDING job_domains row per domain: a domain's
        row is written with its first result (save_result), and read as PENDING until then."""
        if any(job.idempotency_key is not None for job in new_jobs):
            raise ValueError("insert_batch_jobs_in writes jobs without an idempotency key; use insert_job_in")
        job_rows = [job_row(job) for job in new_jobs]
        if job_rows:
            insert_rows(conn, jobs, [*job_rows[0], "batch_domains"],
                        [(*row.values(), batch_domains_text(job)) for row, job in zip(job_rows, new_jobs)])

    async def get_job(self, job_id: str) -> Job | None:
        return await self._run(lambda conn: _job_in(conn, job_id))

    async def release_idempotency_key(self, job_id: str) -> None:
        await self._run(lambda conn: conn.execute(
            update(jobs).where(jobs.c.id == job_id).values(idempotency_key=None, updated_at=time.time())
        ))

    async def set_job_status(self, job_id: str, status: JobStatus, error: str | None = None, *,
                             only_from: Collection[JobStatus] | None = None) -> bool:
        query = update(jobs).where(jobs.c.id == job_id)
        if only_from is not None:
            # Compare-and-set in one statement: PostgreSQL re-checks the condition on the row
            # version it waited for, SQLite runs one writer at a time.
            query = query.where(jobs.c.status.in_([s.value for s in only_from]))
        values = query.values(status=status.value, error=error, updated_at=time.time(), **NO_PAUSE)
        return await self._run(lambda conn: conn.execute(values).rowcount > 0)

    async def record_pause(self, job_id: str, pause: JobPause) -> None:
        await self._run(lambda conn: conn.execute(update(jobs).where(
            jobs.c.id == job_id, jobs.c.status == JobStatus.PENDING.value).values(**pause_values(pause))))

    async def save_result(self, job_id: str, result: DomainResult, answer: Answer | None) -> bool:
        check_storable(result, answer)  # the same refusal on every backend, before any write

        def work(conn: Connection) -> bool:
            # FOR SHARE on the job row: a status change (set_job_status) waits for this save
            # and this save for it, so a job finished by another writer takes no more results.
            job = conn.execute(
                select(jobs.c.status, jobs.c.batch_domains).where(jobs.c.id == job_id).with_for_update(read=True)
            ).first()
            recorded = job is not None and not JobStatus(job.status).finished
            if recorded and job.batch_domains is None:
                conn.execute(
                    update(job_domains)
                    .where(job_domains.c.job_id == job_id, job_domains.c.domain == result.domain)
                    .values(**result_values(result), finished_at=time.time())
                )
            elif recorded and result.domain in (listed := listed_domains(job.batch_domains)):
                _upsert_result_in(conn, job_id, listed.index(result.domain), result)
            if answer is not None:
                conn.execute(UPSERT_ANSWER, answer_params(answer))
            return recorded

        def refusing_unstorable(conn: Connection) -> bool:
            try:
                return work(conn)
            except (UnicodeEncodeError, DataError) as error:
                # What passed the check and the database still refused (e.g. a character outside
                # a LATIN1 database's encoding): nothing is written, and the domain fails alone.
                raise UnstorableText(f"the database refused the result of {result.domain}: "
                                     f"{storable_error(getattr(error, 'orig', None) or error)}") from error

        return await self._run(refusing_unstorable)

    async def record_reply(self, job_id: str, *, sent: bool, error: str | None) -> None:
        await self._run(lambda conn: conn.execute(
            update(jobs).where(jobs.c.id == job_id).values(reply_sent=sent, reply_error=error, updated_at=time.time())
        ))

    async def list_failed_jobs(self, *, error: str, limit: int) -> list[Job]:
        def work(conn: Connection) -> list[str]:
            query = (select(jobs.c.id).where(jobs.c.status == JobStatus.FAILED.value, jobs.c.error == error)
                     .order_by(jobs.c.created_at).limit(limit))
            return list(conn.execute(query).scalars())

        found = [await self.get_job(job_id) for job_id in await self._run(work)]
        return [job for job in found if job is not None]

    async def get_answers(self, domains: Iterable[str], classifier: str) -> dict[str, Answer]:
        wanted = list(domains)

        def work(conn: Connection) -> dict[str, Answer]:
            rows = conn.execute(
                select(answers).where(answers.c.classifier == classifier, answers.c.domain.in_(wanted))
            ).mappings().all()
            return {row["domain"]: stored_answer(row) for row in rows}

        return await self._run(work) if wanted else {}

    async def forget_answers(self, classifier: str, domains: Collection[str] | None, *, only_precheck: bool) -> int:
        where = [answers.c.classifier == classifier]
        if only_precheck:
            where.append(answers.c.source == Source.PRECHECK.value)
        if domains is None:
            return await self._run(lambda conn: conn.execute(delete(answers).where(*where)).rowcount)
        wanted = list(domains)

        def work(conn: Connection) -> int:
            # In slices: SQLite caps a statement's parameters (32,766), and a batch has up to 100,000 domains.
            return sum(conn.execute(delete(answers).where(*where, answers.c.domain.in_(wanted[start:start + 1000])))
                       .rowcount for start in range(0, len(wanted), 1000))

        return await self._run(work) if wanted else 0

    async def recent_evidence(self, domain: str, classifier: str, since: datetime) -> Answer | None:
        # evidence_use.may_lend_evidence as SQL, on the answers primary key's leading column (domain).
        searched_at = func.coalesce(answers.c.evidence_searched_at, answers.c.answered_at)
        query = (select(answers).where(
            answers.c.domain == domain, answers.c.classifier != classifier,
            answers.c.status == ResultStatus.DONE.value, answers.c.source == Source.LLM.value,
            answers.c.evidence_status == FOUND, answers.c.evidence != "[]", searched_at >= since.timestamp(),
        ).order_by(searched_at.desc(), answers.c.classifier).limit(1))

        def work(conn: Connection) -> Answer | None:
            row = conn.execute(query).mappings().first()
            return None if row is None else stored_answer(row)

        return await self._run(work)

    async def find_known(self, domains: Iterable[str]) -> dict[str, KnownCompany]:
        wanted = list(domains)

        def work(conn: Connection) -> dict[str, KnownCompany]:
            rows = conn.execute(select(known_companies).where(known_companies.c.domain.in_(wanted))).mappings()
            return {row["domain"]: KnownCompany(domain=row["domain"], name=row["name"]) for row in rows}

        return await self._run(work) if wanted else {}

    async def upsert_known(self, companies: Iterable[KnownCompany]) -> int:
        now = time.time()
        params = [{"domain": c.domain, "name": c.name, "imported_at": now} for c in companies]

        def work(conn: Connection) -> int:
            if params:
                conn.execute(UPSERT_KNOWN, params)
            return len(params)

        return await self._run(work)


def _upsert_result_in(conn: Connection, job_id: str, position: int, result: DomainResult) -> None:
    """A batch job's domain result: its job_domains row written now, or overwritten if written
    before (a redelivered job's second answer)."""
    values = {"job_id": job_id, "position": position, "domain": result.domain, **result_values(result),
              "finished_at": time.time()}
    conn.execute(_upsert_result_statement(tuple(values)), values)


@functools.cache
def _upsert_result_statement(columns: tuple[str, ...]) -> TextClause:
    """The upsert of a job_domains row of these columns, made once: text() parses the statement
    for its parameters each time it is made, and a new one has its cache key worked out again."""
    answered = [name for name in columns if name not in ("job_id", "position", "domain")]
    # Targets the unique index on job_domains (job_id, domain).
    return text(f"""
        INSERT INTO job_domains ({", ".join(columns)}) VALUES ({", ".join(f":{name}" for name in columns)})
        ON CONFLICT (job_id, domain) DO UPDATE SET {", ".join(f"{name} = excluded.{name}" for name in answered)}
    """)


def _job_in(conn: Connection, job_id: str) -> Job | None:
    row = conn.execute(select(jobs).where(jobs.c.id == job_id)).mappings().first()
    if row is None:
        return None
    rows = conn.execute(
        select(job_domains).where(job_domains.c.job_id == job_id).order_by(job_domains.c.position)
    ).mappings().all()
    if row["batch_domains"] is not None:
        listed = listed_domains(row["batch_domains"])
        # A batch's job: the domains it lists, each PENDING until its row is written.
        written = {r["domain"]: r for r in rows}
        rows = [written.get(pending["domain"]) or {**_UNWRITTEN, **pending}
                for pending in pending_domain_rows(job_id, listed)]
    return Job(
        id=row["id"], classifier=row["classifier"], status=JobStatus(row["status"]),
        created_at=epoch_time(row["created_at"]), domains=tuple(r["domain"] for r in rows),
        reply_queue=row["reply_queue"], results=tuple(domain_result(r) for r in rows),
        error=row["error"], reply_sent=bool(row["reply_sent"]), reply_error=row["reply_error"],
        owner=row["owner"], idempotency_key=row["idempotency_key"], pause=job_pause(row),
    )
