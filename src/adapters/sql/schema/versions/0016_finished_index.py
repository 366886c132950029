"""0016: The index of finished job domains holds only finished ones."""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Only the spend of finished domains is summed by finished_at (a range, which both databases
    # know implies NOT NULL), yet every domain written PENDING, 100,000 for a large batch, put a
    # NULL entry in the index: a partial index skips them.
    return [
        "DROP INDEX ix_job_domains_finished_at",
        "CREATE INDEX ix_job_domains_finished_at ON job_domains (finished_at) WHERE finished_at IS NOT NULL",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "DROP INDEX ix_job_domains_finished_at",
        "CREATE INDEX ix_job_domains_finished_at ON job_domains (finished_at)",
    ):
        op.execute(statement)
