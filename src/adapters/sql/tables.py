"""SQLAlchemy Core table objects used by the queries (the DDL lives in migrations.py)."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, Float, Integer, MetaData, Table, Text

metadata = MetaData()

jobs = Table(
    "jobs",
    metadata,
    Column("id", Text, primary_key=True),
    Column("classifier", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("reply_queue", Text),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("error", Text),
    Column("reply_sent", Boolean, nullable=False),
    Column("reply_error", Text),
    Column("owner", Text, nullable=False),
    Column("idempotency_key", Text),
)

job_domains = Table(
    "job_domains",
    metadata,
    Column("job_id", Text, primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("domain", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("source", Text),
    Column("answer", Boolean),
    Column("confidence", Integer),
    Column("reason", Text, nullable=False),
    Column("evidence", Text, nullable=False),
    Column("error", Text),
    Column("finished_at", Float),
    Column("evidence_status", Text),
    Column("search_provider", Text),
    Column("quote", Text),
    Column("quote_status", Text),
    Column("tokens_in", Integer),
    Column("tokens_out", Integer),
    Column("cost_usd", Float),
    Column("answer_tokens_in", Integer),
    Column("answer_tokens_out", Integer),
    Column("answer_cost_usd", Float),
    Column("site_status", Text),
    Column("redirected_to", Text),
    Column("redirected_answer", Boolean),
    Column("evidence_reused_from", Text),
    Column("evidence_searched_at", Float),
)

answers = Table(
    "answers",
    metadata,
    Column("domain", Text, primary_key=True),
    Column("classifier", Text, primary_key=True),
    Column("status", Text, nullable=False),
    Column("source", Text, nullable=False),
    Column("answer", Boolean),
    Column("confidence", Integer),
    Column("reason", Text, nullable=False),
    Column("evidence", Text, nullable=False),
    Column("error", Text),
    Column("raw_output", Text),
    Column("model", Text),
    Column("prompt_version", Text),
    Column("answered_at", Float, nullable=False),
    Column("evidence_status", Text),
    Column("search_provider", Text),
    Column("quote", Text),
    Column("quote_status", Text),
    Column("tokens_in", Integer),
    Column("tokens_out", Integer),
    Column("cost_usd", Float),
    Column("site_status", Text),
    Column("redirected_to", Text),
    Column("redirected_answer", Boolean),
    Column("evidence_reused_from", Text),
    Column("evidence_searched_at", Float),
)

known_companies = Table(
    "known_companies",
    metadata,
    Column("domain", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("imported_at", Float, nullable=False),
)

queue_messages = Table(
    "queue_messages",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("queue", Text, nullable=False),
    Column("group_id", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("dedup_id", Text),
    Column("sent_at", Float, nullable=False),
    Column("visible_at", Float, nullable=False),
    Column("receive_count", Integer, nullable=False),
    Column("receipt", Text),
)

queue_dedup = Table(
    "queue_dedup",
    metadata,
    Column("queue", Text, primary_key=True),
    Column("dedup_id", Text, primary_key=True),
    Column("message_id", BigInteger, nullable=False),
    Column("expires_at", Float, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("key_hash", Text, nullable=False),
    Column("reply_queues", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float),
    Column("daily_limit_usd", Float),
)

batches = Table(
    "batches",
    metadata,
    Column("id", Text, primary_key=True),
    Column("classifier", Text, nullable=False),
    Column("owner", Text, nullable=False),
    Column("reply_queue", Text),
    Column("idempotency_key", Text),
    Column("request_hash", Text, nullable=False),
    Column("csv_header", Text),
    Column("total", Integer, nullable=False),
    Column("accepted", Integer, nullable=False),
    Column("duplicates", Integer, nullable=False),
    Column("rejected", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("cancelled_at", Float),
    Column("reply_sent", Boolean, nullable=False),
)

batch_jobs = Table(
    "batch_jobs",
    metadata,
    Column("job_id", Text, primary_key=True),
    Column("batch_id", Text, nullable=False),
)

batch_rows = Table(
    "batch_rows",
    metadata,
    Column("batch_id", Text, primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("line", Integer),
    Column("original", Text, nullable=False),
    Column("domain", Text),
    Column("job_id", Text),
    Column("rejection", Text),
)
