"""Alembic's environment: migrations run on the connection firmsift hands over (migrations.py), inside
its transaction; offline, they print the SQL for a dialect without any database."""

from __future__ import annotations

from alembic import context

from firmsift.adapters.sql.tables import metadata

config = context.config
connection = config.attributes.get("connection")

if context.is_offline_mode():
    context.configure(dialect_name=config.get_main_option("dialect", "postgresql"), literal_binds=True, target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()
elif connection is not None:
    # firmsift's runner holds the transaction (and PostgreSQL's advisory lock) around this.
    context.configure(connection=connection, target_metadata=metadata)
    context.run_migrations()
else:
    raise SystemExit("firmsift's migrations run through `firmsift db upgrade|downgrade|history|sql` "
                     "(or its start-up), which hand Alembic the connection")
