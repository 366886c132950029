"""Numbered schema migrations, recorded in `schema_migrations`; portable SQL that runs on
SQLite and PostgreSQL alike (only the auto-increment key differs), one runner at a time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text

from firmsift.adapters.sql.errors import database_errors


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: Callable[[str], list[str]]  # dialect name -> SQL statements


def _m001_initial(dialect: str) -> list[str]:
    auto_id = "INTEGER PRIMARY KEY AUTOINCREMENT" if dialect == "sqlite" else "BIGSERIAL PRIMARY KEY"
    return [
        """CREATE TABLE jobs (
            id TEXT PRIMARY KEY,
            classifier TEXT NOT NULL,
            status TEXT NOT NULL,
            reply_queue TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            error TEXT,
            reply_sent BOOLEAN NOT NULL DEFAULT FALSE,
            reply_error TEXT)""",
        """CREATE TABLE job_domains (
            job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            domain TEXT NOT NULL,
            status TEXT NOT NULL,
            source TEXT,
            answer BOOLEAN,
            confidence INTEGER,
            reason TEXT NOT NULL DEFAULT '',
            evidence TEXT NOT NULL DEFAULT '[]',
            error TEXT,
            finished_at DOUBLE PRECISION,
            PRIMARY KEY (job_id, position),
            UNIQUE (job_id, domain))""",
        """CREATE TABLE answers (
            domain TEXT NOT NULL,
            classifier TEXT NOT NULL,
            status TEXT NOT NULL,
            source TEXT NOT NULL,
            answer BOOLEAN,
            confidence INTEGER,
            reason TEXT NOT NULL DEFAULT '',
            evidence TEXT NOT NULL DEFAULT '[]',
            error TEXT,
            raw_output TEXT,
            model TEXT,
            prompt_version TEXT,
            answered_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (domain, classifier))""",
        """CREATE TABLE known_companies (
            domain TEXT PRIMARY KEY,
            name TEXT NOT NULL DEFAULT '',
            imported_at DOUBLE PRECISION NOT NULL)""",
        f"""CREATE TABLE queue_messages (
            id {auto_id},
            queue TEXT NOT NULL,
            group_id TEXT NOT NULL,
            body TEXT NOT NULL,
            dedup_id TEXT,
            sent_at DOUBLE PRECISION NOT NULL,
            visible_at DOUBLE PRECISION NOT NULL,
            receive_count INTEGER NOT NULL DEFAULT 0,
            receipt TEXT)""",
        "CREATE INDEX ix_queue_messages_ready ON queue_messages (queue, visible_at)",
        "CREATE INDEX ix_queue_messages_group ON queue_messages (queue, group_id, id)",
        "CREATE UNIQUE INDEX ix_queue_messages_receipt ON queue_messages (receipt)",
        """CREATE TABLE queue_dedup (
            queue TEXT NOT NULL,
            dedup_id TEXT NOT NULL,
            message_id BIGINT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (queue, dedup_id))""",
    ]


def _m002_keys_idempotency_leases(_dialect: str) -> list[str]:
    return [
        # API keys: only a hash of each key is kept; reply_queues is a JSON list of allowed names.
        """CREATE TABLE api_keys (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            key_hash TEXT NOT NULL UNIQUE,
            reply_queues TEXT NOT NULL DEFAULT '[]',
            created_at DOUBLE PRECISION NOT NULL,
            revoked_at DOUBLE PRECISION)""",
        # The key that submitted a job ('' when auth is off), and its Idempotency-Key header.
        "ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE jobs ADD COLUMN idempotency_key TEXT",
        "CREATE UNIQUE INDEX ix_jobs_owner_idempotency_key ON jobs (owner, idempotency_key)",
        # Who is asking the LLM about a (domain, classifier) right now, across workers, until when.
        """CREATE TABLE answer_leases (
            domain TEXT NOT NULL,
            classifier TEXT NOT NULL,
            holder TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (domain, classifier))""",
    ]


def _m003_evidence_status(_dialect: str) -> list[str]:
    # How the search for an answer's evidence went (found / none: why); NULL where no search ran.
    return [
        "ALTER TABLE answers ADD COLUMN evidence_status TEXT",
        "ALTER TABLE job_domains ADD COLUMN evidence_status TEXT",
    ]


def _m004_search_provider(_dialect: str) -> list[str]:
    # Which search provider's evidence an answer used; NULL where it used none, and on older rows.
    return [
        "ALTER TABLE answers ADD COLUMN search_provider TEXT",
        "ALTER TABLE job_domains ADD COLUMN search_provider TEXT",
    ]


def _m005_quotes(_dialect: str) -> list[str]:
    # The model's quote from the evidence and whether it was found there (verified / unverified /
    # no_quote / no_evidence); NULL where no LLM answered, and in rows stored before quotes.
    return [
        "ALTER TABLE answers ADD COLUMN quote TEXT",
        "ALTER TABLE answers ADD COLUMN quote_status TEXT",
        "ALTER TABLE job_domains ADD COLUMN quote TEXT",
        "ALTER TABLE job_domains ADD COLUMN quote_status TEXT",
    ]


def _m006_site_status(_dialect: str) -> list[str]:
    # The pre-check's domain status (live / no_dns / unreachable / parked / blocked / redirected / unknown),
    # where a redirect leads, and the target's answer when it had a fresh one; NULL where no
    # pre-check ran, and in rows stored before it.
    return [
        f"ALTER TABLE {table} ADD COLUMN {column}"
        for table in ("answers", "job_domains")
        for column in ("site_status TEXT", "redirected_to TEXT", "redirected_answer BOOLEAN")
    ]


def _m007_answer_cost(_dialect: str) -> list[str]:
    # What an answer's LLM call was billed: tokens as the provider reported them and their price
    # in USD. On job_domains, what the job spent on the domain (0 when it reused an answer) and
    # the answer's own figures. NULL: unknown, and in rows stored before costs were recorded.
    # Only columns of this migration's own are named, so it applies whatever migration 6 adds.
    return [
        "ALTER TABLE answers ADD COLUMN tokens_in INTEGER",
        "ALTER TABLE answers ADD COLUMN tokens_out INTEGER",
        "ALTER TABLE answers ADD COLUMN cost_usd DOUBLE PRECISION",
        "ALTER TABLE job_domains ADD COLUMN tokens_in INTEGER",
        "ALTER TABLE job_domains ADD COLUMN tokens_out INTEGER",
        "ALTER TABLE job_domains ADD COLUMN cost_usd DOUBLE PRECISION",
        "ALTER TABLE job_domains ADD COLUMN answer_tokens_in INTEGER",
        "ALTER TABLE job_domains ADD COLUMN answer_tokens_out INTEGER",
        "ALTER TABLE job_domains ADD COLUMN answer_cost_usd DOUBLE PRECISION",
    ]


def _m008_batches(_dialect: str) -> list[str]:
    # Batches (POST /batches): each input row with the caller's original values (a JSON list of
    # cells, or the JSON item), its domain and job, or why it was rejected; and which jobs a batch
    # was split into. Depends only on jobs (m001) and owner/idempotency keys (m002).
    return [
        """CREATE TABLE batches (
            id TEXT PRIMARY KEY,
            classifier TEXT NOT NULL,
            owner TEXT NOT NULL DEFAULT '',
            reply_queue TEXT,
            idempotency_key TEXT,
            request_hash TEXT NOT NULL DEFAULT '',
            csv_header TEXT,
            total INTEGER NOT NULL DEFAULT 0,
            accepted INTEGER NOT NULL DEFAULT 0,
            duplicates INTEGER NOT NULL DEFAULT 0,
            rejected INTEGER NOT NULL DEFAULT 0,
            created_at DOUBLE PRECISION NOT NULL,
            cancelled_at DOUBLE PRECISION,
            reply_sent BOOLEAN NOT NULL DEFAULT FALSE)""",
        "CREATE UNIQUE INDEX ix_batches_owner_idempotency_key ON batches (owner, idempotency_key)",
        """CREATE TABLE batch_jobs (
            job_id TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
            batch_id TEXT NOT NULL REFERENCES batches(id) ON DELETE CASCADE)""",
        "CREATE INDEX ix_batch_jobs_batch ON batch_jobs (batch_id)",
        """CREATE TABLE batch_rows (
            batch_id TEXT NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            line INTEGER,
            original TEXT NOT NULL,
            domain TEXT,
            job_id TEXT,
            rejection TEXT,
            PRIMARY KEY (batch_id, position))""",
    ]


def _m009_budgets(_dialect: str) -> list[str]:
    # Daily spend limits: a key's own limit in USD (NULL: none), and an index for summing what
    # finished in a day (the spend a limit is checked against).
    return [
        "ALTER TABLE api_keys ADD COLUMN daily_limit_usd DOUBLE PRECISION",
        "CREATE INDEX ix_job_domains_finished_at ON job_domains (finished_at)",
    ]


def _m010_evidence_reuse(_dialect: str) -> list[str]:
    # Evidence reused from another classifier's recent answer: that classifier and when its search
    # ran (epoch seconds); NULL where the answer searched itself, and in rows stored before reuse.
    # No index: the look-up is by domain, the leading column of the answers primary key.
    # Only columns of this migration's own are named, so it applies whatever migration 9 adds.
    return [
        f"ALTER TABLE {table} ADD COLUMN {column}"
        for table in ("answers", "job_domains")
        for column in ("evidence_reused_from TEXT", "evidence_searched_at DOUBLE PRECISION")
    ]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial", _m001_initial),
    Migration(2, "keys_idempotency_leases", _m002_keys_idempotency_leases),
    Migration(3, "evidence_status", _m003_evidence_status),
    Migration(4, "search_provider", _m004_search_provider),
    Migration(5, "quotes", _m005_quotes),
    Migration(6, "site_status", _m006_site_status),
    Migration(7, "answer_cost", _m007_answer_cost),
    Migration(8, "batches", _m008_batches),
    Migration(9, "budgets", _m009_budgets),
    Migration(10, "evidence_reuse", _m010_evidence_reuse),
)

CREATE_MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
)
# A PostgreSQL advisory lock held until the transaction ends. Its 64-bit key spells "firmsift"
# in ASCII, a key no other application on the server is likely to pick.
MIGRATION_LOCK_KEY = int.from_bytes(b"firmsift", "big")
LOCK_MIGRATIONS = text("SELECT pg_advisory_xact_lock(:key)")
IS_APPLIED = text("SELECT 1 FROM schema_migrations WHERE version = :v")
RECORD_MIGRATION = text("INSERT INTO schema_migrations (version, name, applied_at) VALUES (:v, :n, :t)")


@database_errors()
def upgrade(engine: Engine) -> list[Migration]:
    """Apply every migration not yet recorded, each in its own transaction; returns those applied.
    Safe to run from several processes at once: the first applies, the others find it recorded.
    A driver error leaves as DatabaseUnavailable (what start-up waits out) or DatabaseFailure."""
    applied: list[Migration] = []
    with engine.begin() as conn:
        _serialize(conn)
        conn.exec_driver_sql(CREATE_MIGRATIONS_TABLE)
    for migration in MIGRATIONS:
        with engine.begin() as conn:
            _serialize(conn)
            if _is_applied(conn, migration.version):
                continue
            for statement in migration.statements(engine.dialect.name):
                conn.exec_driver_sql(statement)
            conn.execute(RECORD_MIGRATION, {"v": migration.version, "n": migration.name, "t": time.time()})
            applied.append(migration)
    return applied


def _serialize(conn: Connection) -> None:
    """Make concurrent runners take turns for the rest of this transaction, so they neither
    race on CREATE TABLE (PostgreSQL reports a duplicate pg_type row) nor apply a migration
    twice. SQLite needs nothing: BEGIN IMMEDIATE already gives one writer at a time."""
    if conn.dialect.name == "postgresql":
        conn.execute(LOCK_MIGRATIONS, {"key": MIGRATION_LOCK_KEY})


def _is_applied(conn: Connection, version: int) -> bool:
    return conn.execute(IS_APPLIED, {"v": version}).first() is not None
