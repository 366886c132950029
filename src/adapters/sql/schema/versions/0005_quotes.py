"""0005: The model's quote from the evidence and whether it was found there."""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # The model's quote from the evidence and whether it was found there (verified / unverified /
    # no_quote / no_evidence); NULL where no LLM answered, and in rows stored before quotes.
    return [
        "ALTER TABLE answers ADD COLUMN quote TEXT",
        "ALTER TABLE answers ADD COLUMN quote_status TEXT",
        "ALTER TABLE job_domains ADD COLUMN quote TEXT",
        "ALTER TABLE job_domains ADD COLUMN quote_status TEXT",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "ALTER TABLE answers DROP COLUMN quote",
        "ALTER TABLE answers DROP COLUMN quote_status",
        "ALTER TABLE job_domains DROP COLUMN quote",
        "ALTER TABLE job_domains DROP COLUMN quote_status",
    ):
        op.execute(statement)
