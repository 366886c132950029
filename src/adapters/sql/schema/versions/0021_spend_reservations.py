"""0021: Spend held for LLM calls still running, so a daily limit counts them before they finish."""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # A limit was checked against what had finished only: a key limited to 0.05 USD started 40
    # calls (8 USD) before the first one's cost was stored. Each call now holds its expected cost
    # here first; the check counts the holds too.
    return [
        "CREATE TABLE spend_reservations (id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
        "amount_usd DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL)",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    op.execute("DROP TABLE spend_reservations")
