"""PostgreSQL and SQLite through SQLAlchemy: the store, the embedded queue, keys, leases, migrations."""
