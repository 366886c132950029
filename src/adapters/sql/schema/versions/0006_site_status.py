"""0006: The pre-check's domain status, where a redirect leads and the target's answer."""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # The pre-check's domain status (live / no_dns / unreachable / parked / blocked / redirected / unknown),
    # where a redirect leads, and the target's answer when it had a fresh one; NULL where no
    # pre-check ran, and in rows stored before it.
    return [
        f"ALTER TABLE {table} ADD COLUMN {column}"
        for table in ("answers", "job_domains")
        for column in ("site_status TEXT", "redirected_to TEXT", "redirected_answer BOOLEAN")
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        "ALTER TABLE answers DROP COLUMN site_status",
        "ALTER TABLE answers DROP COLUMN redirected_to",
        "ALTER TABLE answers DROP COLUMN redirected_answer",
        "ALTER TABLE job_domains DROP COLUMN site_status",
        "ALTER TABLE job_domains DROP COLUMN redirected_to",
        "ALTER TABLE job_domains DROP COLUMN redirected_answer",
    ):
        op.execute(statement)
