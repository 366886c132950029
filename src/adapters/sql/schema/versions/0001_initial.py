"""0001: The first schema: jobs and their domains, answers, known companies, the embedded queue."""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def statements(dialect: str) -> list[str]:
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


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "DROP TABLE queue_dedup",
        "DROP TABLE queue_messages",
        "DROP TABLE known_companies",
        "DROP TABLE answers",
        "DROP TABLE job_domains",
        "DROP TABLE jobs",
    ):
        op.execute(statement)
