"""0014: Economy mode: a batch's mode, the questions waiting for the provider's batch API, the jobs
waiting for them, and the provider batches they went out in."""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Economy mode: a batch's mode; the questions waiting for the provider's batch API (one per
    # domain and classifier, whatever the number of jobs waiting for it), the jobs waiting, and
    # the provider batches they went out in (recorded before and after each step, so a restart
    # resumes instead of submitting twice).
    return [
        "ALTER TABLE batches ADD COLUMN mode TEXT NOT NULL DEFAULT 'standard'",
        "ALTER TABLE batches ADD COLUMN refresh BOOLEAN NOT NULL DEFAULT FALSE",
        """CREATE TABLE provider_batches (
            id TEXT PRIMARY KEY,
            status TEXT NOT NULL,
            input_file_id TEXT,
            batch_id TEXT,
            output_file_id TEXT,
            error_file_id TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            closed_at DOUBLE PRECISION)""",
        "CREATE INDEX ix_provider_batches_open ON provider_batches (closed_at, created_at)",
        """CREATE TABLE deferred_questions (
            domain TEXT NOT NULL,
            classifier TEXT NOT NULL,
            question TEXT NOT NULL,
            template TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            provider_batch TEXT REFERENCES provider_batches(id),
            deferred_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (domain, classifier))""",
        "CREATE INDEX ix_deferred_questions_batch ON deferred_questions (provider_batch, deferred_at)",
        """CREATE TABLE deferred_question_jobs (
            domain TEXT NOT NULL,
            classifier TEXT NOT NULL,
            job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
            since DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (domain, classifier, job_id))""",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "DROP TABLE deferred_question_jobs",
        "DROP TABLE deferred_questions",
        "DROP TABLE provider_batches",
        "ALTER TABLE batches DROP COLUMN refresh",
        "ALTER TABLE batches DROP COLUMN mode",
    ):
        op.execute(statement)
