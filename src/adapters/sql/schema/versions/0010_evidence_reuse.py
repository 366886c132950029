"""0010: Evidence reused from another classifier's recent answer."""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Evidence reused from another classifier's recent answer: that classifier and when its search
    # ran (epoch seconds); NULL where the answer searched itself, and in rows stored before reuse.
    # No index: the look-up is by domain, the leading column of the answers primary key.
    # Only columns of this migration's own are named, so it applies whatever migration 9 adds.
    return [
        f"ALTER TABLE {table} ADD COLUMN {column}"
        for table in ("answers", "job_domains")
        for column in ("evidence_reused_from TEXT", "evidence_searched_at DOUBLE PRECISION")
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "ALTER TABLE answers DROP COLUMN evidence_reused_from",
        "ALTER TABLE answers DROP COLUMN evidence_searched_at",
        "ALTER TABLE job_domains DROP COLUMN evidence_reused_from",
        "ALTER TABLE job_domains DROP COLUMN evidence_searched_at",
    ):
        op.execute(statement)
