"""0012: People's corrections (human answers) and their history, for undo."""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def statements(dialect: str) -> list[str]:
    # People's corrections (issue 15), apart from the answers cache so that nothing the worker
    # writes there can overwrite or expire them. The history keeps, per change, what it replaced
    # (all value columns NULL: there was no human answer), so an undo restores exactly that.
    auto_id = "INTEGER PRIMARY KEY AUTOINCREMENT" if dialect == "sqlite" else "BIGSERIAL PRIMARY KEY"
    return [
        """CREATE TABLE human_answers (
            classifier TEXT NOT NULL,
            domain TEXT NOT NULL,
            answer BOOLEAN NOT NULL,
            note TEXT NOT NULL,
            corrected_by TEXT,
            corrected_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (classifier, domain))""",
        f"""CREATE TABLE human_answer_history (
            id {auto_id},
            classifier TEXT NOT NULL,
            domain TEXT NOT NULL,
            answer BOOLEAN,
            note TEXT,
            corrected_by TEXT,
            corrected_at DOUBLE PRECISION,
            replaced_at DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ix_human_answer_history_key ON human_answer_history (classifier, domain, id)",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in ("DROP TABLE human_answer_history", "DROP TABLE human_answers"):
        op.execute(statement)
