"""${up_revision}: ${message}"""

from __future__ import annotations

from alembic import op

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Portable SQL for SQLite and PostgreSQL; say what the change is for.
    return []


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in ():
        op.execute(statement)
