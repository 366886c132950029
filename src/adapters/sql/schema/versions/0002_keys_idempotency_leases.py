"""0002: API keys, the owner and Idempotency-Key of a job, and answer leases across workers."""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
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


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "DROP TABLE answer_leases",
        "DROP INDEX ix_jobs_owner_idempotency_key",
        "ALTER TABLE jobs DROP COLUMN idempotency_key",
        "ALTER TABLE jobs DROP COLUMN owner",
        "DROP TABLE api_keys",
    ):
        op.execute(statement)
