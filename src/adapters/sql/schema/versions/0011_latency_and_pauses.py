"""0011: How long an LLM answer took, and why a job waits (the spend limit that paused it)."""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

PAUSE_TIMES = ("limit_usd", "spent_usd", "at", "resets_at", "next_check_at")


def statements(_dialect: str) -> list[str]:
    # How long an LLM answer took: its call and its evidence gathering, in seconds (NULL: not
    # measured, and in rows stored before). The index gives a dry run a classifier's latest answers.
    # And why a job waits: the spend limit that paused it (NULL: not paused).
    return ["ALTER TABLE answers ADD COLUMN llm_seconds DOUBLE PRECISION",
            "ALTER TABLE answers ADD COLUMN evidence_seconds DOUBLE PRECISION",
            "CREATE INDEX ix_answers_classifier_answered_at ON answers (classifier, answered_at)",
            "ALTER TABLE jobs ADD COLUMN paused_scope TEXT",
            *(f"ALTER TABLE jobs ADD COLUMN paused_{name} DOUBLE PRECISION" for name in PAUSE_TIMES)]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in (
        *(f"ALTER TABLE jobs DROP COLUMN paused_{name}" for name in reversed(PAUSE_TIMES)),
        "ALTER TABLE jobs DROP COLUMN paused_scope",
        "DROP INDEX ix_answers_classifier_answered_at",
        "ALTER TABLE answers DROP COLUMN evidence_seconds",
        "ALTER TABLE answers DROP COLUMN llm_seconds",
    ):
        op.execute(statement)
