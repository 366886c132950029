"""0009: Daily spend limits."""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Daily spend limits: a key's own limit in USD (NULL: none), and an index for summing what
    # finished in a day (the spend a limit is checked against).
    return [
        "ALTER TABLE api_keys ADD COLUMN daily_limit_usd DOUBLE PRECISION",
        "CREATE INDEX ix_job_domains_finished_at ON job_domains (finished_at)",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "DROP INDEX ix_job_domains_finished_at",
        "ALTER TABLE api_keys DROP COLUMN daily_limit_usd",
    ):
        op.execute(statement)
