"""Fixtures the integration suites share: the app on a SQLite file, built by the wiring
(`make_container`, `container`, `database`, `app`, `api_client`, `client`), and the batch store on
every backend.

A module (or a test) says which container and client it wants with markers, merged closest last:
`pytest.mark.container(auth="required", rate_limit_per_minute=0)` (`make_container`'s arguments:
Settings, and `database`, the file's name) and `pytest.mark.client(base_url="https://testserver")`
(the test client's options). A test that needs another container besides calls `make_container`
with its settings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import make_url
from starlette.testclient import TestClient

from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.store import SqlStore
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.runtime import start_container
from tests.support.databases import SQL_BACKENDS, migrated_engine


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "container(database=None, **settings): the `container` fixture's "
                                       "make_container arguments")
    config.addinivalue_line("markers", "client(**options): the `client` fixture's TestClient options")


def _marked(request: pytest.FixtureRequest, name: str) -> dict[str, Any]:
    """The keyword arguments of every `name` marker on the test, the closest (the test's own) last."""
    merged: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers(name))):
        merged.update(marker.kwargs)
    return merged


@pytest.fixture
def make_container(tmp_path: Path) -> Iterator[Callable[..., Container]]:
    """Starts containers as `firmsift` does (start_container: logging configured, the schema
    migrated), each on a SQLite file in the test's folder, and shuts each down after the test
    (`shutdown_resources()`, which disposes its engine; an engine a test put in its place too).

    `make_container(database=None, **settings)`: `settings` are the Settings besides the database
    URL; `database` names the file, a new one for each call unless named (a name used before
    opens that file again)."""
    started: list[Container] = []

    def make(database: str | None = None, **settings: Any) -> Container:
        name = database or ("firmsift.db" if not started else f"firmsift-{len(started) + 1}.db")
        container = start_container(Settings(database_url=f"sqlite:///{tmp_path / name}", **settings))
        started.append(container)
        return container

    yield make
    for container in reversed(started):
        if container.engine.overridden:
            container.engine().dispose()
        container.shutdown_resources()


@pytest.fixture
def container(request: pytest.FixtureRequest, make_container: Callable[..., Container]) -> Container:
    """A container on a SQLite file, made by `make_container` with the test's `container` markers."""
    return make_container(**_marked(request, "container"))


@pytest.fixture
def database(container: Container) -> Path:
    """The SQLite file `container` is on."""
    return Path(str(make_url(container.settings().database_url).database))


@pytest.fixture
def app(container: Container):  # noqa: ANN201 - a Starlette app; starlette is imported by the wiring on demand
    """`container`'s HTTP API (and web app)."""
    return container.api()


@pytest.fixture
def api_client() -> Iterator[Callable[..., TestClient]]:
    """Opens a Starlette test client on an app (`api_client(app, **options)`), answering a server
    error as the app does (unless `raise_server_exceptions=True`); each is closed after the test."""
    with ExitStack() as clients:
        def open_client(app: Any, **options: Any) -> TestClient:
            return clients.enter_context(TestClient(app, **{"raise_server_exceptions": False, **options}))

        yield open_client


@pytest.fixture
def client(request: pytest.FixtureRequest, app: Any, api_client: Callable[..., TestClient]) -> TestClient:
    """A test client on `app`, with the test's `client` markers as options."""
    return api_client(app, **_marked(request, "client"))


@pytest.fixture(params=["memory", *SQL_BACKENDS])
async def batches(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[InMemoryBatches | SqlBatches]:
    """The batch store on the in-memory store, SQLite and PostgreSQL."""
    if request.param == "memory":
        yield InMemoryBatches(InMemoryStore())
        return
    with migrated_engine(request.param, tmp_path) as engine:
        yield SqlBatches(SqlStore(engine))
