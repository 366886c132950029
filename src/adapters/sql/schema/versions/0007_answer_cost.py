"""0007: What an answer's LLM call was billed: tokens and USD."""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
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


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "ALTER TABLE answers DROP COLUMN tokens_in",
        "ALTER TABLE answers DROP COLUMN tokens_out",
        "ALTER TABLE answers DROP COLUMN cost_usd",
        "ALTER TABLE job_domains DROP COLUMN tokens_in",
        "ALTER TABLE job_domains DROP COLUMN tokens_out",
        "ALTER TABLE job_domains DROP COLUMN cost_usd",
        "ALTER TABLE job_domains DROP COLUMN answer_tokens_in",
        "ALTER TABLE job_domains DROP COLUMN answer_tokens_out",
        "ALTER TABLE job_domains DROP COLUMN answer_cost_usd",
    ):
        op.execute(statement)
