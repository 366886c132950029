"""SQLAlchemy Core table objects: what the queries use, and what the schema must be. The DDL lives in
Alembic's revisions (schema/versions); tests/integration/test_schema_drift.py fails when the two differ."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
    text,
)

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
    Column("paused_scope", Text),
    Column("paused_limit_usd", Float),
    Column("paused_spent_usd", Float),
    Column("paused_at", Float),
    Column("paused_resets_at", Float),
    Column("paused_next_check_at", Float),
    # A batch's job: its domains, newline-separated in order; their job_domains rows are written
    # with their results (migration 17). NULL: every domain's row was written with the job.
    Column("batch_domains", Text),
    Index("ix_jobs_owner_idempotency_key", "owner", "idempotency_key", unique=True),
)

job_domains = Table(
    "job_domains",
    metadata,
    Column("job_id", Text, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
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
    # The result's fields as a batch's result line writes them (batch_results.shown_members), made
    # when the result is saved (migration 18); NULL while PENDING and for results saved before.
    Column("shown", Text),
    UniqueConstraint("job_id", "domain"),
    # Partial (migration 15): a domain enters it when it finishes, not when a batch writes it PENDING.
    Index("ix_job_domains_finished_at", "finished_at", sqlite_where=text("finished_at IS NOT NULL"),
          postgresql_where=text("finished_at IS NOT NULL")),
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
    Column("llm_seconds", Float),
    Column("evidence_seconds", Float),
    Index("ix_answers_classifier_answered_at", "classifier", "answered_at"),
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
    Index("ix_queue_messages_ready", "queue", "visible_at"),
    Index("ix_queue_messages_group", "queue", "group_id", "id"),
    Index("ix_queue_messages_receipt", "receipt", unique=True),
)

queue_dedup = Table(
    "queue_dedup",
    metadata,
    Column("queue", Text, primary_key=True),
    Column("dedup_id", Text, primary_key=True),
    Column("message_id", BigInteger, nullable=False),
    Column("expires_at", Float, nullable=False),
    Index("ix_queue_dedup_expires_at", "queue", "expires_at"),  # a send's purge of expired ids
)

# Who is asking the LLM about a (domain, classifier) right now, across workers, until when.
# Spend held for LLM calls still running, counted against the daily limits with what finished
# (domain/spend_reservations.py); a hold is dropped once its call's cost is stored.
spend_reservations = Table(
    "spend_reservations",
    metadata,
    Column("id", Text, primary_key=True),
    Column("owner", Text, nullable=False),
    Column("amount_usd", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)

answer_leases = Table(
    "answer_leases",
    metadata,
    Column("domain", Text, primary_key=True),
    Column("classifier", Text, primary_key=True),
    Column("holder", Text, nullable=False),
    Column("expires_at", Float, nullable=False),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("id", Text, primary_key=True),
    Column("name", Text, nullable=False),
    Column("key_hash", Text, nullable=False, unique=True),
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
    Column("mode", Text, nullable=False),
    Column("refresh", Boolean, nullable=False),
    Index("ix_batches_owner_idempotency_key", "owner", "idempotency_key", unique=True),
)

batch_jobs = Table(
    "batch_jobs",
    metadata,
    Column("job_id", Text, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    Column("batch_id", Text, ForeignKey("batches.id", ondelete="CASCADE"), nullable=False),
    Index("ix_batch_jobs_batch", "batch_id"),
)

batch_rows = Table(
    "batch_rows",
    metadata,
    Column("batch_id", Text, ForeignKey("batches.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("line", Integer),
    Column("original", Text, nullable=False),
    Column("domain", Text),
    Column("job_id", Text),
    Column("rejection", Text),
)

human_answers = Table(
    "human_answers",
    metadata,
    Column("classifier", Text, primary_key=True),
    Column("domain", Text, primary_key=True),
    Column("answer", Boolean, nullable=False),
    Column("note", Text, nullable=False),
    Column("corrected_by", Text),
    Column("corrected_at", Float, nullable=False),
)

human_answer_history = Table(
    "human_answer_history",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("classifier", Text, nullable=False),
    Column("domain", Text, nullable=False),
    Column("answer", Boolean),
    Column("note", Text),
    Column("corrected_by", Text),
    Column("corrected_at", Float),
    Column("replaced_at", Float, nullable=False),
    Index("ix_human_answer_history_key", "classifier", "domain", "id"),
)

# The LLM's pacing shared by every worker process (adapters/sql/pacing.py): its state as JSON.
llm_pacing = Table(
    "llm_pacing",
    metadata,
    Column("provider_key", Text, primary_key=True),
    Column("state", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
)

provider_batches = Table(
    "provider_batches",
    metadata,
    Column("id", Text, primary_key=True),
    Column("status", Text, nullable=False),
    Column("input_file_id", Text),
    Column("batch_id", Text),
    Column("output_file_id", Text),
    Column("error_file_id", Text),
    Column("created_at", Float, nullable=False),
    Column("closed_at", Float),
    Index("ix_provider_batches_open", "closed_at", "created_at"),
)

deferred_questions = Table(
    "deferred_questions",
    metadata,
    Column("domain", Text, primary_key=True),
    Column("classifier", Text, primary_key=True),
    Column("question", Text, nullable=False),
    Column("template", Text, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("provider_batch", Text, ForeignKey("provider_batches.id")),
    Column("deferred_at", Float, nullable=False),
    Index("ix_deferred_questions_batch", "provider_batch", "deferred_at"),
)

deferred_question_jobs = Table(
    "deferred_question_jobs",
    metadata,
    Column("domain", Text, primary_key=True),
    Column("classifier", Text, primary_key=True),
    Column("job_id", Text, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True),
    Column("since", Float, nullable=False),
)

web_sessions = Table(
    "web_sessions",
    metadata,
    Column("id_digest", Text, primary_key=True),  # SHA-256 of the cookie's session id
    Column("key_id", Text),  # None: not signed in
    Column("csrf", Text, nullable=False),
    Column("notice", Text),
    Column("last_used", Float, nullable=False),
    Index("ix_web_sessions_last_used", "last_used"),
)

web_secrets = Table(
    "web_secrets",
    metadata,
    Column("name", Text, primary_key=True),  # what the secret signs: "sign_in_forms"
    Column("secret", Text, nullable=False),  # 32 random bytes, hex, made by migration 0020
)
