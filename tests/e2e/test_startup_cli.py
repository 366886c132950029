"""Starting `firmsift` as a user does: what it says about its configuration, what it refuses, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.postgres import postgres_engine
from tests.support.processes import Processes, refusing_port, start_api

pytestmark = pytest.mark.e2e

PROVIDER_VARIABLES = ("OPENAI_API_KEY", "FIRMSIFT_LLM_API_KEY", "FIRMSIFT_LLM_API_BASE", "FIRMSIFT_LLM_MODEL")


@pytest.fixture
def no_llm_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first hour: no key anywhere (subprocesses inherit this environment)."""
    for variable in PROVIDER_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


def firmsift(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=180)


def log_entries(text: str, message: str) -> list[dict]:
    return [entry for line in text.splitlines() if line.startswith("{")
            for entry in [json.loads(line)] if entry["message"].startswith(message)]


def test_a_worker_without_llm_credentials_refuses_to_start_naming_the_three_fixes(
        tmp_path: Path, no_llm_credentials: None) -> None:
    result = firmsift("worker", env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}"})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "the LLM has no credentials" in line and "one of three ways" in line
    assert "FIRMSIFT_LLM_API_KEY" in line and "OPENAI_API_KEY" in line and "FIRMSIFT_LLM_API_BASE" in line


def test_serve_without_llm_credentials_takes_jobs_but_is_not_ready(tmp_path: Path, no_llm_credentials: None) -> None:
    """The choice for `serve`: its API starts (jobs are accepted and wait in the queue), its
    worker does not, the log says why and /readyz is 503 with an `llm` check."""
    processes = Processes(tmp_path)
    try:
        serve, base = start_api(processes, "serve", command="serve",
                                extra_env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 's.db'}"})
        ready = httpx.get(f"{base}/readyz", timeout=10)
        assert ready.status_code == 503
        assert ready.json()["checks"]["database"] == "ok"
        assert "FIRMSIFT_LLM_API_KEY" in ready.json()["checks"]["llm"]
        accepted = httpx.post(f"{base}/domains/classify", json={"domains": ["unilever.com"]}, timeout=10)
        assert accepted.status_code == 202
        [refusal] = log_entries(serve.log(), "no worker started")
        assert refusal["level"] == "ERROR" and "one of three ways" in refusal["message"]
        job = httpx.get(f"{base}/domains/classify/{accepted.json()['job_id']}", timeout=10).json()
        assert job["status"] == "PENDING"  # waits for a worker that can authenticate; never failed
        # Said where the user looks, with the fix: the 202s, GET, the web app and the CLI.
        for document in (accepted.json(), job, httpx.post(f"{base}/batches", json={"domains": ["a.com"]},
                                                          timeout=10).json()):
            assert document["warning"].startswith("no worker can run, so jobs wait in the queue: the LLM has no "
                                                  "credentials"), document
            assert "FIRMSIFT_LLM_API_KEY" in document["warning"]
        page = httpx.get(f"{base}/", timeout=10).text
        assert '<p class="warning" role="alert">no worker can run' in page
        listed = tmp_path / "list.csv"
        listed.write_text("Website\nunilever.com\n")
        cli = firmsift("classify", "--api", base, "--csv", str(listed), "--timeout", "3", "--poll-interval", "0.2")
        assert cli.returncode == 1
        assert "firmsift: the API warns: no worker can run" in cli.stderr
        assert cli.stderr.index("the API warns") < cli.stderr.index("gave up")
        # The migrations of a new database: one line, not one per revision.
        assert len(log_entries(serve.log(), "database schema upgraded to revision")) == 1
        assert not [line for line in serve.log().splitlines() if '"logger": "alembic' in line]
    finally:
        processes.stop_all()


def test_every_process_logs_its_configuration_and_no_secret(tmp_path: Path) -> None:
    secrets = {"FIRMSIFT_LLM_API_KEY": "sk-never-logged-1", "FIRMSIFT_TAVILY_API_KEY": "tvly-never-logged-2"}
    with postgres_engine() as engine:
        # The test server trusts local connections, so any password is accepted and must stay hidden.
        url = engine.url.set(password="pg-never-logged-3").render_as_string(hide_password=False)
        processes = Processes(tmp_path)
        env = {**secrets, "FIRMSIFT_DATABASE_URL": url, "FIRMSIFT_SEARCH_PROVIDER": "tavily",
               "FIRMSIFT_LLM_MODEL": "openai/local", "FIRMSIFT_LLM_API_BASE": "http://127.0.0.1:9/v1"}
        try:
            api, _base = start_api(processes, extra_env=env)
        finally:
            processes.stop_all()
    [entry] = log_entries(api.log(), "effective configuration")
    assert entry["command"] == "api" and entry["model"] == "openai/local" and entry["llm_api_base"] == "127.0.0.1:9"
    assert entry["search_provider"] == "tavily" and entry["queue"] == "db firmsift-jobs"
    assert entry["database"].startswith("postgresql+psycopg://postgres:***@")
    assert entry["auth"] == "auto: API keys not required on 127.0.0.1"
    for secret in [*secrets.values(), "pg-never-logged-3"]:
        assert secret not in api.log()


def test_an_unknown_variable_is_warned_with_the_nearest_name(tmp_path: Path) -> None:
    result = firmsift("db", "upgrade", env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'u.db'}",
                                            "FIRMSIFT_LLM_MODLE": "openai/typo"})
    assert result.returncode == 0, result.stderr
    assert ("firmsift: warning: FIRMSIFT_LLM_MODLE is not a firmsift setting and is ignored "
            "(did you mean FIRMSIFT_LLM_MODEL?)") in result.stderr


@pytest.mark.parametrize("case", ["unreachable postgresql", "unsupported database", "sqlite folder", "not a url"])
def test_database_errors_are_one_line_exit_2(tmp_path: Path, case: str) -> None:
    with refusing_port() as port:
        url = {"unreachable postgresql": f"postgresql://firmsift:pg-secret@127.0.0.1:{port}/firmsift",
               "unsupported database": "mysql://root:pg-secret@127.0.0.1/firmsift",
               "sqlite folder": f"sqlite:///{tmp_path}",
               "not a url": "firmsift.db"}[case]
        result = firmsift("db", "upgrade", env={"FIRMSIFT_DATABASE_URL": url})
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("firmsift: ") and "pg-secret" not in line
    assert "DATABASE_URL" in line or "cannot use the database" in line


def test_another_directory_gets_no_second_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default SQLite path is relative to the current directory: `serve`, `api` and
    `db upgrade` create it there and say where; other commands refuse instead of starting empty."""
    monkeypatch.delenv("FIRMSIFT_DATABASE_URL", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = firmsift("keys", "list", cwd=elsewhere)
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert f"no database at {elsewhere}/firmsift-data/firmsift.db" in line
    assert not (elsewhere / "firmsift-data").exists()

    created = firmsift("db", "upgrade", cwd=elsewhere)
    assert created.returncode == 0, created.stderr
    [announced] = log_entries(created.stderr, "creating a new database")
    assert announced["path"] == f"{elsewhere}/firmsift-data/firmsift.db"
    assert (elsewhere / "firmsift-data" / "firmsift.db").exists()


@pytest.mark.parametrize("command", ["api", "serve", "worker"])
def test_a_sqlite_file_that_cannot_be_opened_is_one_line_exit_2_for_long_running_commands(
        tmp_path: Path, command: str) -> None:
    """As for `db upgrade`: waiting would not make the file appear (PostgreSQL is waited for)."""
    result = firmsift(command, env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path}",
                                    "FIRMSIFT_LLM_API_KEY": "unused-no-job-is-answered-here"})
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"firmsift: cannot use the database sqlite:///{tmp_path}")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("database", ["sqlite", "postgresql down"])
def test_an_unsafe_auth_setting_is_refused_before_any_database_work(tmp_path: Path, database: str) -> None:
    """No new database file, no wait for a database that is down: the setting is the problem."""
    with refusing_port() as port:
        url = {"sqlite": "", "postgresql down": f"postgresql://firmsift@127.0.0.1:{port}/firmsift"}[database]
        env = {"FIRMSIFT_AUTH": "off", "FIRMSIFT_DATABASE_WAIT_SECONDS": "60"}
        if url:
            env["FIRMSIFT_DATABASE_URL"] = url
        result = subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", "api", "--host", "0.0.0.0"],
                                capture_output=True, text=True, timeout=50, cwd=tmp_path,
                                env={k: v for k, v in {**os.environ, **env}.items()
                                     if url or k != "FIRMSIFT_DATABASE_URL"})
    assert result.returncode == 2, result.stderr
    assert "FIRMSIFT_AUTH=off is allowed only when listening on a loopback address" in result.stderr
    assert not (tmp_path / "firmsift-data").exists()
    assert "database unreachable" not in result.stderr


@pytest.mark.parametrize(("content", "said"), [
    ('[[wall]]\nservice = "Acme WAF"\nwhat = "challenge"\nsource = "x"\nstatuses = [999]\ntitle_any = ["x"]\n',
     "walls.toml: wall #1 ('Acme WAF'): statuses: must be a list of HTTP status codes"),
    ('[[wall]]\nservice = "Acme WAF"\nsource = "x"\ntitle_any = ["x"]\n',
     "walls.toml: wall #1 ('Acme WAF'): what: missing"),
])
def test_a_bad_signature_file_is_one_line_exit_2_naming_file_entry_and_field(tmp_path: Path, content: str,
                                                                             said: str) -> None:
    (tmp_path / "walls.toml").write_text(content)
    result = firmsift("db", "upgrade", env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}",
                                            "FIRMSIFT_SIGNATURES_DIR": str(tmp_path)})
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("firmsift: invalid configuration: ") and said in line, line


def test_homepage_resolve_without_private_addresses_is_refused_at_start_up(tmp_path: Path) -> None:
    result = firmsift("db", "upgrade", env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}",
                                            "FIRMSIFT_HOMEPAGE_RESOLVE": "acme.example=127.0.0.1:8081"})
    assert result.returncode == 2
    assert "only with FIRMSIFT_HOMEPAGE_ALLOW_PRIVATE_ADDRESSES=true" in result.stderr
