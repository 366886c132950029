"""0004: Which search provider's evidence an answer used."""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Which search provider's evidence an answer used; NULL where it used none, and on older rows.
    return [
        "ALTER TABLE answers ADD COLUMN search_provider TEXT",
        "ALTER TABLE job_domains ADD COLUMN search_provider TEXT",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "ALTER TABLE answers DROP COLUMN search_provider",
        "ALTER TABLE job_domains DROP COLUMN search_provider",
    ):
        op.execute(statement)
