"""0017: A batch's jobs list their domains on the job row; job_domains rows come with the answers."""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def statements(_dialect: str) -> list[str]:
    # A batch of 100,000 domains wrote 100,000 PENDING job_domains rows at intake, each into the
    # table and its two unique indexes: the largest write of POST /batches. A batch's job now
    # keeps its domains here (newline-separated, in order) and a domain's job_domains row is
    # written with its first result; NULL for a job whose rows were all written when it was made.
    return ["ALTER TABLE jobs ADD COLUMN batch_domains TEXT"]


def upgrade() -> None:
    for statement in statements(op.get_context().dialect.name):
        op.execute(statement)


def downgrade() -> None:
    # Rows a batch job has not written yet come first, so nothing it lists is lost.
    op.execute("""
        WITH RECURSIVE listed(job_id, position, domain, rest) AS (
            SELECT id, 0, NULL, batch_domains || char(10) FROM jobs WHERE batch_domains IS NOT NULL
            UNION ALL
            SELECT job_id, position + 1, substr(rest, 1, instr(rest, char(10)) - 1),
                   substr(rest, instr(rest, char(10)) + 1)
            FROM listed WHERE rest <> '')
        INSERT INTO job_domains (job_id, position, domain, status, reason, evidence)
        SELECT job_id, position - 1, domain, 'PENDING', '', '[]' FROM listed WHERE domain IS NOT NULL
        ON CONFLICT DO NOTHING""" if op.get_context().dialect.name == "sqlite" else """
        INSERT INTO job_domains (job_id, position, domain, status, reason, evidence)
        SELECT j.id, d.n - 1, d.domain, 'PENDING', '', '[]'
        FROM jobs AS j, unnest(string_to_array(j.batch_domains, chr(10))) WITH ORDINALITY AS d(domain, n)
        WHERE j.batch_domains IS NOT NULL
        ON CONFLICT DO NOTHING""")
    op.execute("ALTER TABLE jobs DROP COLUMN batch_domains")
