"""0003: How the search for an answer's evidence went."""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # How the search for an answer's evidence went (found / none: why); NULL where no search ran.
    return [
        "ALTER TABLE answers ADD COLUMN evidence_status TEXT",
        "ALTER TABLE job_domains ADD COLUMN evidence_status TEXT",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "ALTER TABLE answers DROP COLUMN evidence_status",
        "ALTER TABLE job_domains DROP COLUMN evidence_status",
    ):
        op.execute(statement)
