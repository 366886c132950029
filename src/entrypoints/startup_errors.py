"""The one line printed for an error of settings, configuration or database access (exit code 2)."""

from __future__ import annotations

import difflib
import os
import tomllib

from pydantic import ValidationError

from firmsift.entrypoints.settings import CONFIG_FILE_VARIABLE, ConfigurationError, Settings
from firmsift.ports.infrastructure_errors import DatabaseFailure, InvalidDatabaseUrl

ENV_PREFIX = "FIRMSIFT_"


def startup_error_line(error: BaseException, database: str | None = None) -> str | None:
    """The line (without the `firmsift: ` prefix) that says what is wrong and what to set, or None
    when `error` is not a configuration or database error (the caller lets it propagate).
    `database` names the database in use, password hidden, for database errors."""
    if isinstance(error, ValidationError):
        return f"invalid settings: {settings_problems(error)}"
    if isinstance(error, ConfigurationError):
        # Our own message, written to be read: a file with several problems lists each on its line.
        return f"invalid configuration: {str(error).strip()}"
    if isinstance(error, tomllib.TOMLDecodeError):
        return f"invalid configuration: {_config_file()}: {first_line(str(error))}"
    line = _database_error_line(error, database)
    if line is not None:
        return line
    if isinstance(error, OSError) and error.filename is not None:
        # Creating the SQLite file's folder or opening a settings file: the file and the reason.
        return f"cannot use {error.filename}: {error.strerror or error}"
    return None


def settings_problems(error: ValidationError) -> str:
    """Each problem as `FIRMSIFT_NAME: what is wrong`, joined on one line. Values are never
    echoed: a rejected value may be a key or hold a password."""
    problems = []
    for problem in error.errors():
        message = problem["msg"].removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden" and problem["loc"]:
            problems.append(_unknown_key(str(problem["loc"][0])))
        elif problem["loc"]:
            field = ".".join(str(part) for part in problem["loc"])
            problems.append(f"{ENV_PREFIX}{field.upper()}: {message}")
        else:
            problems.append(message)
    return "; ".join(problems)


def _config_file() -> str:
    return os.environ.get(CONFIG_FILE_VARIABLE) or "the configuration file"


def _unknown_key(key: str) -> str:
    """A key of the configuration file (environment variables are never refused: see
    unknown_variables.py) that names no setting, with the nearest setting when one is close."""
    nearest = difflib.get_close_matches(key.lower(), list(Settings.model_fields), n=1, cutoff=0.75)
    hint = f" (did you mean {nearest[0]}?)" if nearest else " (docs/reference/settings.md lists the settings)"
    return f"{key} in {_config_file()} is not a setting{hint}"


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _database_error_line(error: BaseException, database: str | None) -> str | None:
    where = f" {database}" if database else ""
    if isinstance(error, InvalidDatabaseUrl):  # a malformed URL, or a dialect SQLAlchemy cannot load
        return f"invalid {ENV_PREFIX}DATABASE_URL: {first_line(str(error))}"
    if isinstance(error, DatabaseFailure):
        # The driver's own message: connection refused, unknown database, authentication failed,
        # unable to open database file.
        return f"cannot use the database{where}: {first_line(str(error))}"
    return None
