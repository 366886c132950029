"""Fixtures the integration suites share, every graph built by the wiring: containers started as
firmsift starts them, on a SQLite file, a PostgreSQL database or in memory, and their API
(`make_container`, `container`, `database`, `app`, `api_client`, `client`); the stores on every
backend, in memory, SQLite and PostgreSQL (`backend_container`, `store`, `batches`); a migrated
engine on each SQL backend (`engine`); one fixture per fake server (`fake_search_server`,
`fake_llm_server`).

A module (or a test) says which container and client it wants with markers, merged closest last:
`pytest.mark.container(auth="required", rate_limit_per_minute=0)` (`make_container`'s arguments:
Settings, and `database`, the file's name) and `pytest.mark.client(base_url="https://testserver")`
(the test client's options). A test that needs another container besides calls `make_container`
with its settings, and `api_client` for a client on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from sqlalchemy import Engine, make_url
from starlette.applications import Starlette
from starlette.testclient import TestClient

from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.wiring.runtime import start_container
from tests.support.databases import SQL_BACKENDS, migrated_engine
from tests.support.fake_llm_server import FakeLLMServer
from tests.support.fake_search_server import FakeSearchServer
from tests.support.postgres import postgres_engine


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
    migrated), and shuts each down after the test (`shutdown_resources()`, which disposes its
    engine; an engine a test put in its place too).

    `make_container(database=None, *, backend="sqlite", **settings)`: `settings` are the Settings
    besides the database URL. On "sqlite" the database is a file in the test's folder that
    `database` names, a new one for each call unless named (a name used before opens that file
    again); on "postgresql" a fresh database, dropped after the test (skipped when the server is
    unreachable, failed on CI: tests/support/postgres.py); on "memory" the container is
    `in_memory_container` and has no database."""
    with ExitStack() as started:
        files = 0

        def database_url(backend: str, database: str | None) -> str:
            nonlocal files
            if backend == "postgresql":
                return started.enter_context(postgres_engine(migrate=False)).url.render_as_string(hide_password=False)
            files += 1
            return f"sqlite:///{tmp_path / (database or ('firmsift.db' if files == 1 else f'firmsift-{files}.db'))}"

        def make(database: str | None = None, *, backend: str = "sqlite", **settings: Any) -> Container:
            if backend == "memory":
                container = in_memory_container(Settings(**settings))
            else:
                container = start_container(Settings(database_url=database_url(backend, database), **settings))
            started.callback(_shut_down, container)
            return container

        yield make


def _shut_down(container: Container) -> None:
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
def app(container: Container) -> Starlette:
    """`container`'s HTTP API (and web app)."""
    return container.api()


@pytest.fixture
def api_client() -> Iterator[Callable[..., TestClient]]:
    """Opens a Starlette test client on an app (`api_client(app, **options)`), answering a server
    error as the app does (unless `raise_server_exceptions=True`); each is closed after the test."""
    with ExitStack() as clients:
        def open_client(app: Starlette, **options: Any) -> TestClient:
            return clients.enter_context(TestClient(app, **{"raise_server_exceptions": False, **options}))

        yield open_client


@pytest.fixture
def client(request: pytest.FixtureRequest, app: Starlette, api_client: Callable[..., TestClient]) -> TestClient:
    """A test client on `app`, with the test's `client` markers as options."""
    return api_client(app, **_marked(request, "client"))


@pytest.fixture(params=["memory", *SQL_BACKENDS])
def backend_container(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Container]:
    """The wiring's graph on each backend, for the suites that run one set of tests against all of
    them: in memory (`in_memory_container()`), and on a fresh SQLite file or PostgreSQL database
    (skipped when the server is unreachable, failed on CI: tests/support/postgres.py), migrated,
    whose engine the container is handed. Its providers are the stores: `backend_container.store()`,
    `.human_answers()`, `.api_keys()`, `.web_sessions()`, `.answer_history()`, `.spend_ledger()`,
    `.batches()`, `.deferred_questions()`, `.leases()`."""
    if request.param == "memory":
        container = in_memory_container()
        yield container
        container.shutdown_resources()
        return
    with migrated_engine(request.param, tmp_path) as engine:
        container = Container(settings=Settings(database_url=engine.url.render_as_string(hide_password=False)))
        container.engine.override(providers.Object(engine))
        yield container
        container.shutdown_resources()


@pytest.fixture
def store(backend_container: Container) -> Any:
    """The job and answer store on each backend."""
    return backend_container.store()


@pytest.fixture
def batches(backend_container: Container) -> Any:
    """The batch store on each backend."""
    return backend_container.batches()


@pytest.fixture(params=SQL_BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A fresh database on each SQL backend, migrated (tests/support/databases.py)."""
    with migrated_engine(request.param, tmp_path) as engine:
        yield engine


@pytest.fixture
def fake_search_server() -> Iterator[FakeSearchServer]:
    """The fake web and search-API server (tests/support/fake_search_server.py), on a loopback
    port, stopped after the test."""
    with FakeSearchServer() as running:
        yield running


@pytest.fixture
def fake_llm_server() -> Iterator[FakeLLMServer]:
    """The fake OpenAI-compatible LLM server (tests/support/fake_llm_server.py), on a loopback
    port, stopped after the test."""
    fake = FakeLLMServer()
    with fake:
        yield fake
