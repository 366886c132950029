"""0018: A job domain's result keeps the text a batch's result line writes of it."""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Reading a finished batch's results decoded each row's columns (its evidence's JSON among
    # them) and encoded them again for its line: ~3x the cost of a row not yet answered. The
    # result's fields as the line writes them are now made once, when the result is saved; NULL
    # for rows saved before this revision, which are read the general way.
    return ["ALTER TABLE job_domains ADD COLUMN shown TEXT"]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    op.execute("ALTER TABLE job_domains DROP COLUMN shown")
