"""Where the SQLite database file is, and which commands may create it (the others refuse to)."""

from __future__ import annotations

from pathlib import Path

from firmsift.adapters.sql.engine import database_url
from firmsift.entrypoints.settings import ConfigurationError, Settings

# The commands that start a service taking jobs, or create the schema on purpose. Any other
# command (worker, keys, companies, answers, replies, dlq) finding no database file is run from the wrong
# directory or with the wrong URL: creating an empty database there would hide the mistake.
CREATING_COMMANDS = frozenset({"serve", "api", "db"})


def sqlite_file(url: str) -> Path | None:
    """The absolute path of the SQLite file `url` names (relative paths are relative to the
    current directory, as SQLite opens them), or None for PostgreSQL and in-memory SQLite."""
    parsed = database_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path.cwd() / Path(parsed.database).expanduser()


def describe_database(url: str) -> str:
    """The database as a log line may show it: a SQLite file by its absolute path, any other URL
    with its password hidden."""
    path = sqlite_file(url)
    if path is not None:
        return f"sqlite:///{path}"
    return database_url(url).render_as_string(hide_password=True)


def database_to_create(settings: Settings, command: str) -> Path | None:
    """The SQLite file this command is about to create (to be announced), or None when the
    database exists or is not a file. Raises ConfigurationError when a command that should find
    an existing database finds none."""
    path = sqlite_file(settings.database_url)
    if path is None or path.exists():
        return None
    if command in CREATING_COMMANDS:
        return path
    relative = not Path(database_url(settings.database_url).database or "").expanduser().is_absolute()
    where = (f" (FIRMSIFT_DATABASE_URL={settings.database_url} is relative to the current directory, "
             f"{Path.cwd()})" if relative else "")
    raise ConfigurationError(
        f"no database at {path}{where}: run `firmsift {command}` from the directory where `firmsift serve` "
        f"runs, set FIRMSIFT_DATABASE_URL=sqlite:///<absolute path of the database>, or create a new one "
        f"with `firmsift db upgrade`")
