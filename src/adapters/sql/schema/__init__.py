"""Alembic's script directory: env.py and one revision per schema change (versions/)."""
