"""Alembic revisions, oldest first: NNNN_name.py holds revision "NNNN"; portable SQL for SQLite and PostgreSQL."""
