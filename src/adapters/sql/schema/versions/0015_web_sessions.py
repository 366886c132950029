"""0015: The web app's sessions, shared by every API process."""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Web sessions in the database rather than one API process's memory, so `firmsift api
    # --workers N` keeps a browser signed in whichever process answers. Keyed by the SHA-256 of
    # the cookie's id; last_used (epoch seconds) for forgetting idle sessions.
    return [
        """CREATE TABLE web_sessions (
            id_digest TEXT PRIMARY KEY,
            key_id TEXT,
            csrf TEXT NOT NULL,
            notice TEXT,
            last_used DOUBLE PRECISION NOT NULL)""",
        "CREATE INDEX ix_web_sessions_last_used ON web_sessions (last_used)",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in ("DROP TABLE web_sessions",):
        op.execute(statement)
