"""The `firmsift` command as a user runs it: serve, classify, companies import, settings errors."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import Processes, refusing_port, start_api

pytestmark = pytest.mark.e2e


def firmsift(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def test_help_lists_every_command_and_exit_codes() -> None:
    result = firmsift("--help")
    assert result.returncode == 0
    for command in ("serve", "api", "worker", "classify", "companies", "replies", "db"):
        assert command in result.stdout
    assert "Exit codes" in result.stdout
    for command in (["serve"], ["api"], ["worker"], ["classify"], ["companies", "import"], ["replies"], ["db", "upgrade"]):
        assert firmsift(*command, "--help").returncode == 0


def test_usage_errors_exit_2() -> None:
    assert firmsift("nonsense").returncode == 2
    assert firmsift("companies").returncode == 2


def test_invalid_settings_exit_2_naming_the_variable(tmp_path: Path) -> None:
    result = firmsift("db", "upgrade", env={"FIRMSIFT_MAX_DOMAINS_PER_JOB": "zero",
                                            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"})
    assert result.returncode == 2
    assert "FIRMSIFT_MAX_DOMAINS_PER_JOB" in result.stderr
    result = firmsift("db", "upgrade", env={"FIRMSIFT_SEARCH_PROVIDER": "searxng",
                                            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"})
    assert result.returncode == 2 and "FIRMSIFT_SEARXNG_URL" in result.stderr


def test_config_file_is_read_and_environment_wins(tmp_path: Path) -> None:
    config = tmp_path / "firmsift.toml"
    config.write_text(f'database_url = "sqlite:///{tmp_path / "from-file.db"}"\nmax_domains_per_job = 0\n')
    bad = firmsift("db", "upgrade", env={"FIRMSIFT_CONFIG_FILE": str(config)})
    assert bad.returncode == 2 and "MAX_DOMAINS_PER_JOB" in bad.stderr
    good = firmsift("db", "upgrade", env={"FIRMSIFT_CONFIG_FILE": str(config), "FIRMSIFT_MAX_DOMAINS_PER_JOB": "3"})
    assert good.returncode == 0, good.stderr
    assert (tmp_path / "from-file.db").exists()


def test_companies_import_keeps_good_rows_reports_bad_ones_and_is_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "companies.db"
    env = {"FIRMSIFT_DATABASE_URL": f"sqlite:///{db}"}
    source = tmp_path / "companies.csv"
    source.write_text("Domain,name\nhttps://www.unilever.com/,Unilever\nlocalhost,Nope\n\nmars.com,Mars\n1.2.3.4,\n")
    assert firmsift("db", "upgrade", env=env).returncode == 0  # `companies import` never creates a database
    first = firmsift("companies", "import", str(source), env=env)
    assert first.returncode == 1
    assert "line 3: domain 'localhost'" in first.stderr and "line 6: domain '1.2.3.4'" in first.stderr
    assert "imported 2 companies; 2 row(s) rejected" in first.stdout
    again = firmsift("companies", "import", str(source), env=env)
    assert "imported 2 companies" in again.stdout
    with sqlite3.connect(db) as conn:
        assert sorted(conn.execute("SELECT domain, name FROM known_companies")) == [
            ("mars.com", "Mars"), ("unilever.com", "Unilever")]


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), ("name\nx\n", "no 'domain' column"), (b"\xff\xfe\x00", "not UTF-8")],
)
def test_companies_import_refuses_unreadable_files(tmp_path: Path, content, message: str) -> None:
    path = tmp_path / "in.csv"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    sqlite3.connect(tmp_path / "c.db").close()  # an existing (empty) database: `companies import` creates none
    result = firmsift("companies", "import", str(path), env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"})
    assert result.returncode == 1 and message in result.stderr


def test_serve_then_classify_a_csv_in_batches(tmp_path: Path) -> None:
    processes = Processes(tmp_path)
    try:
        _llm, llm_port = processes.start_fake("tests.support.fake_llm_server")
        _search, search_port = processes.start_fake("tests.support.fake_search_server")
        processes.env = {
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
            "FIRMSIFT_LLM_MODEL": "openai/fake-model",
            "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
            "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
            "FIRMSIFT_MAX_DOMAINS_PER_JOB": "3",
            "FIRMSIFT_WAIT_TIME": "1",
        }
        serve, base = start_api(processes, "serve", command="serve")

        source = tmp_path / "in.csv"
        source.write_text("company,site\nA,acme-snacks.com\nB,https://www.citybank.com\nC,localhost\n"
                          "D,d1.com\nE,d2.com\nF,d3.com\nG,d4.com\nH," + "x" * 300 + ".com\n")
        out = tmp_path / "out.csv"
        env = {**processes.env}
        result = firmsift("classify", "--csv", str(source), "--column", "site", "extra-brand.com",
                          "--api", base, "--batch-size", "3", "--poll-interval", "0.2",
                          "-o", str(out), env=env)
        assert result.returncode == 1, result.stderr  # one input was rejected
        assert "rejected \"localhost\"" in result.stderr
        assert "classified 7/7 domains" in result.stderr
        rows = list(csv.DictReader(io.StringIO(out.read_text())))
        by_domain = {r["domain"]: r for r in rows}
        assert by_domain["localhost"]["status"] == "REJECTED"
        assert by_domain["x" * 300 + ".com"]["status"] == "REJECTED"  # echoed cut short, still matched
        assert by_domain["citybank.com"]["answer"] == "False"
        assert by_domain["acme-snacks.com"]["answer"] == "True"
        assert {r["status"] for r in rows if r["domain"] != "localhost" and len(r["domain"]) < 300} == {"DONE"}
        assert len({r["job_id"] for r in rows if r["job_id"]}) == 3  # 9 inputs, 7 valid, jobs of <= 3

        as_json = firmsift("classify", "acme-snacks.com", "--api", base, "--format", "json",
                           env=env)
        assert as_json.returncode == 0, as_json.stderr
        [answer] = json.loads(as_json.stdout)
        assert answer["source"] == "cache" and answer["answer"] is True
        # uvicorn re-raises the SIGTERM it handled once shutdown is complete, so -15 is a clean exit here.
        assert serve.stop() in (0, -15)
        assert "Application shutdown complete" in serve.log()
    finally:
        processes.stop_all()


def test_classify_without_a_running_api_fails_clearly(tmp_path: Path) -> None:
    with refusing_port() as port:
        result = firmsift("classify", "a.com", "--api", f"http://127.0.0.1:{port}", timeout=120)
    assert result.returncode == 1 and "cannot reach the API" in result.stderr


@pytest.mark.parametrize("case", ["missing config file", "bad toml", "bad database url", "broken classifier"])
def test_configuration_errors_exit_2_with_a_message(tmp_path: Path, case: str) -> None:
    env = {"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"}
    if case == "missing config file":
        env["FIRMSIFT_CONFIG_FILE"] = str(tmp_path / "nope.toml")
    elif case == "bad toml":
        (tmp_path / "bad.toml").write_text("database_url = ")
        env["FIRMSIFT_CONFIG_FILE"] = str(tmp_path / "bad.toml")
    elif case == "bad database url":
        env["FIRMSIFT_DATABASE_URL"] = "not a url at all"
    else:
        (tmp_path / "broken.toml").write_text('name = "x"\n')
        env["FIRMSIFT_CLASSIFIERS_DIR"] = str(tmp_path)
    result = firmsift("db", "upgrade", env=env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("firmsift: invalid") and "Traceback" not in result.stderr
