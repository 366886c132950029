"""A SQLite database made read-only: under a running API, refused with 503 naming the file and what
to do, /readyz 503 saying so, /healthz 200, nothing accepted lost, and work resumes once the files
are writable again, with no restart; before a process starts, one line and exit 1. The files are
made read-only for real (tests/support/read_only_files.py: modes, or the immutable attribute as
root); SQLite's own refusal, which a read-only mount or root meets, is made with `mode=ro`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import event
from starlette.testclient import TestClient

from firmsift.entrypoints.cli.main import main
from firmsift.entrypoints.wiring.container import Container
from tests.support.read_only_files import read_only


@pytest.fixture
def service(tmp_path: Path, make_container: Callable[..., Container]) -> tuple[Container, Path]:
    folder = tmp_path / "data"
    folder.mkdir()
    return make_container(database="data/firmsift.db"), folder


def database_files(folder: Path) -> list[Path]:
    """The folder, the database and its -wal and -shm files: all that SQLite writes."""
    return [folder, *sorted(folder.glob("firmsift.db*"))]


def test_the_api_refuses_work_naming_the_file_while_the_database_is_read_only_and_resumes_after(service) -> None:
    container, folder = service
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        before = client.post("/domains/classify", json={"domains": ["before.com"]})
        assert before.status_code == 202
        job = before.json()["job_id"]
        files = database_files(folder)
        assert [path.name for path in files[1:]] == ["firmsift.db", "firmsift.db-shm", "firmsift.db-wal"]
        with read_only(*files):
            refused = client.post("/domains/classify", json={"domains": ["during.com"]})
            not_ready = client.get("/readyz")
            alive = client.get("/healthz")
            polled_meanwhile = client.get(f"/domains/classify/{job}")
        after = client.post("/domains/classify", json={"domains": ["after.com"]})
        ready = client.get("/readyz")
        polled = client.get(f"/domains/classify/{job}")
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
    error = refused.json()["error"]
    assert error["code"] == "database_read_only"
    assert error["message"].startswith(f"the database is read-only: {folder} is not writable by this process")
    assert f"make the folder {folder}, firmsift.db and its -wal and -shm files writable" in error["message"]
    assert not_ready.status_code == 503
    assert not_ready.json() == {"status": "not ready", "checks": {
        "database": "read-only: the folder of firmsift.db is not writable",
        "database_writes": "read-only: the folder of firmsift.db is not writable",
        "queue": "read-only: the folder of firmsift.db is not writable", "intake": "failing"}}
    assert str(folder) not in not_ready.text  # /readyz is open to anyone: the folder stays in the log
    assert alive.status_code == 200
    assert polled_meanwhile.status_code == 503 and polled_meanwhile.json()["error"]["code"] == "database_read_only"
    # Writable again: no restart, nothing lost.
    assert after.status_code == 202
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    assert polled.status_code == 200 and polled.json()["status"] == "PENDING"


def test_each_file_sqlite_writes_is_checked_and_named(service) -> None:
    container, folder = service
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        assert client.post("/domains/classify", json={"domains": ["a.com"]}).status_code == 202
        for name in ("firmsift.db", "firmsift.db-wal", "firmsift.db-shm"):
            with read_only(folder / name):
                refused = client.post("/domains/classify", json={"domains": ["b.com"]})
                checks = client.get("/readyz").json()["checks"]
            assert refused.status_code == 503
            assert refused.json()["error"]["message"].startswith(f"the database is read-only: {folder / name} ")
            assert checks["database_writes"] == f"read-only: {name} is not writable"
        assert client.post("/domains/classify", json={"domains": ["c.com"]}).status_code == 202


def test_a_connection_sqlite_opened_read_only_is_dropped_so_work_resumes_without_a_restart(service) -> None:
    """SQLite refuses the write itself (a read-only mount; root, whom modes do not stop): the
    connection it opened read-only would stay so, and is dropped; the next one, opened once the
    file is writable, writes."""
    container, _folder = service
    engine = container.engine()
    opens_read_only = {"on": True}

    @event.listens_for(engine, "do_connect")
    def _maybe_read_only(_dialect, _record, cargs, cparams):  # type: ignore[no-untyped-def]
        if opens_read_only["on"]:
            return sqlite3.connect(f"file:{cargs[0]}?mode=ro", uri=True, **cparams)
        return None

    engine.dispose()  # the next connection is opened read-only
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        refused = client.post("/domains/classify", json={"domains": ["a.com"]})
        writes = client.get("/readyz").json()["checks"]["database_writes"]
        opens_read_only["on"] = False  # writable again: no dispose, no restart
        accepted = client.post("/domains/classify", json={"domains": ["a.com"]})
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "database_read_only"
    assert "SQLite refused to write" in refused.json()["error"]["message"]
    assert "mounted read-write" in refused.json()["error"]["message"]
    assert writes == "read-only: SQLite refused to write firmsift.db"
    assert accepted.status_code == 202


@pytest.mark.parametrize("command", [["api", "--port", "0"], ["worker"]])
def test_a_process_started_on_a_read_only_database_says_so_in_one_line_and_exits_1(
        service, command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    container, folder = service
    container.engine().dispose()  # the files as a stopped service leaves them
    monkeypatch.setenv("FIRMSIFT_DATABASE_URL", f"sqlite:///{folder / 'firmsift.db'}")
    monkeypatch.setenv("FIRMSIFT_LLM_API_KEY", "unused-no-job-is-answered-here")
    with read_only(*database_files(folder)):
        code = main(command)
    err = capsys.readouterr().err
    assert code == 1, err
    [line] = [line for line in err.splitlines() if line.startswith("firmsift: ")]
    assert line.startswith(f"firmsift: the database is read-only: {folder} is not writable by this process")
    assert "Traceback" not in err


def test_a_worker_probe_checks_the_files_without_a_query(service) -> None:
    container, folder = service
    check = container.database_writes()
    assert check is not None and check() == "ok"
    with read_only(folder / "firmsift.db-shm"):
        assert check() == "read-only: firmsift.db-shm is not writable"
    assert check() == "ok"
