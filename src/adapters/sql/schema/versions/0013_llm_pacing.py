"""0013: The LLM's pacing shared by every worker process (one row per provider key)."""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # LLM pacing shared by every worker process: one row per provider key (model and API base),
    # its state as JSON (adapters/sql/pacing.py), the wall-clock epoch seconds of its last change.
    return ["""CREATE TABLE llm_pacing (
        provider_key TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL)"""]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in ("DROP TABLE llm_pacing",):
        op.execute(statement)
