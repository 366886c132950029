"""0008: Batches (POST /batches): their rows and jobs."""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
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


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "DROP TABLE batch_rows",
        "DROP TABLE batch_jobs",
        "DROP TABLE batches",
    ):
        op.execute(statement)
