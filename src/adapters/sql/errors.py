"""SQLAlchemy's errors as the ports' database errors: what leaves the SQL adapters when the
database fails or its URL cannot be used."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy.exc import ArgumentError, DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from firmsift.ports.infrastructure_errors import DatabaseFailure, DatabaseUnavailable, InvalidDatabaseUrl


@contextlib.contextmanager
def database_errors() -> Iterator[None]:
    """A driver error raised in the block leaves it as DatabaseUnavailable (PEP 249's
    OperationalError or InterfaceError: the database could not be reached or used) or else as
    DatabaseFailure, with the driver's message and SQLAlchemy's error as the __cause__. A pool
    with no connection free within its timeout is DatabaseUnavailable too: the database is
    there, but this process cannot use it now (every connection busy, or held by a stuck query)."""
    try:
        yield
    except (OperationalError, InterfaceError) as error:
        raise DatabaseUnavailable(_driver_message(error)) from error
    except PoolTimeout as error:
        # args[0] is SQLAlchemy's sentence without its "Background on this error" link.
        raise DatabaseUnavailable(f"no database connection free: {error.args[0]}") from error
    except DBAPIError as error:
        raise DatabaseFailure(_driver_message(error)) from error


@contextlib.contextmanager
def url_errors() -> Iterator[None]:
    """A URL SQLAlchemy refuses (one it cannot parse, a dialect it cannot load, an SQLite URL of
    no form it knows) leaves the block as InvalidDatabaseUrl."""
    try:
        yield
    except ArgumentError as error:
        raise InvalidDatabaseUrl(str(error)) from error


def _driver_message(error: DBAPIError) -> str:
    """The driver's own message, without SQLAlchemy's SQL echo, parameters and background link;
    the driver's class name when it says nothing."""
    text = str(error.orig) if error.orig is not None else str(error)
    return text if text.strip() else type(error).__name__
