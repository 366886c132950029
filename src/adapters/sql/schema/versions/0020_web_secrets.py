"""0020: The secret the web app's sign-in forms are signed with, made once for the database."""

from __future__ import annotations

import secrets

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # Showing the sign-in form used to write an anonymous session row for its CSRF token: a flood
    # of cookie-less GET /login wrote a row each. The token is now signed instead, with this
    # secret, shared by every API process on the database. Made here, once, so no request ever
    # writes it (hex of 32 random bytes: a literal every dialect takes as it is).
    return [
        "CREATE TABLE web_secrets (name TEXT PRIMARY KEY, secret TEXT NOT NULL)",
        f"INSERT INTO web_secrets (name, secret) VALUES ('sign_in_forms', '{secrets.token_hex(32)}')",
    ]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    op.execute("DROP TABLE web_secrets")
