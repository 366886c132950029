"""What a process says when it starts: its configuration, its refusals and its one-line errors."""

from __future__ import annotations

import io
import json
import logging
import sqlite3
import subprocess
import sys
from argparse import Namespace
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from firmsift.adapters.llm.endpoint import api_base_host
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.migrations import upgrade
from firmsift.domain.evaluation import LabelledDomain
from firmsift.entrypoints.wiring.config_summary import log_effective_configuration
from firmsift.entrypoints.wiring.database_file import database_to_create, describe_database
from firmsift.entrypoints.wiring.evaluation import evaluation_backends
from firmsift.entrypoints.eval.command import _known
from firmsift.entrypoints.wiring.llm_credentials import MissingLLMCredentials, llm_credentials_problem, require_llm_credentials
from firmsift.entrypoints.logs import JsonFormatter
from firmsift.entrypoints.settings import ConfigurationError, Settings
from firmsift.entrypoints.startup_errors import startup_error_line
from firmsift.entrypoints.unknown_variables import OTHER_VARIABLES, known_variables, unknown_variable_warnings
from firmsift.ports.infrastructure_errors import DatabaseUnavailable, InvalidDatabaseUrl
from tests.support.postgres import postgres_engine
from tests.support.processes import refusing_port

SECRETS = ("sk-llm-secret-1", "tvly-secret-2", "db-password-3", "userinfo-secret-4", "query-secret-5")


# --- the effective configuration line --------------------------------------------------------

def logged_configuration(settings: Settings, command: str, host: str | None) -> tuple[str, dict]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("firmsift.startup")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        log_effective_configuration(settings, command, host)
    finally:
        logger.removeHandler(handler)
    raw = stream.getvalue()
    [line] = raw.splitlines()
    return raw, json.loads(line)


def test_the_configuration_line_names_what_runs_and_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(
        llm_model="openai/qwen", llm_api_key="sk-llm-secret-1",
        llm_api_base="https://user:userinfo-secret-4@llm.example.com:8443/v1?key=query-secret-5",
        search_provider="tavily", tavily_api_key="tvly-secret-2",
        database_url="postgresql://firmsift:db-password-3@db.internal:5432/firmsift",
        queue_backend="sqs", queue_name="jobs.fifo", auth="auto",
    )
    raw, entry = logged_configuration(settings, "serve", "0.0.0.0")
    assert entry["message"] == "effective configuration"
    assert entry["model"] == "openai/qwen" and entry["llm_api_base"] == "llm.example.com:8443"
    assert entry["search_provider"] == "tavily" and entry["queue"] == "sqs jobs.fifo"
    assert entry["database"] == "postgresql+psycopg://firmsift:***@db.internal:5432/firmsift"
    assert entry["auth"] == "auto: API keys required on 0.0.0.0"
    assert entry["precheck"] == "on (DNS system, outcomes kept 7 days)"
    assert not [secret for secret in SECRETS if secret in raw]


def test_the_configuration_line_says_how_the_precheck_runs() -> None:
    _, entry = logged_configuration(Settings(dns_servers="127.0.0.1", dns_port=5353, precheck_ttl_days=2), "worker",
                                    None)
    assert entry["precheck"] == "on (DNS 127.0.0.1:5353, outcomes kept 2 days)"
    assert logged_configuration(Settings(precheck=False), "worker", None)[1]["precheck"] == "off"


def test_a_sqlite_database_by_its_absolute_path_and_a_queue_by_its_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    sqs = Settings(queue_backend="sqs", sqs_queue_url="https://sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo")
    assert logged_configuration(sqs, "worker", None)[1]["queue"] == "sqs sqs.eu-west-1.amazonaws.com/123456789012/jobs.fifo"
    _raw, entry = logged_configuration(Settings(), "worker", None)
    assert entry["database"] == f"sqlite:///{tmp_path}/firmsift-data/firmsift.db"
    assert entry["llm_api_base"] == "the provider's default" and entry["queue"] == "db firmsift-jobs"
    assert "auth" not in entry  # a worker serves no API


def test_it_says_where_the_models_prices_come_from() -> None:
    def prices(**given: object) -> str:
        return logged_configuration(Settings(**given), "worker", None)[1]["llm_prices"]

    assert prices() == "litellm's local price map (unknown for a model it lacks)"
    assert prices(llm_api_base="http://127.0.0.1:8080/v1").startswith("none for a local API base: costs unknown")
    assert prices(llm_api_base="http://127.0.0.1:8080/v1", llm_input_cost_per_million=0,
                  llm_output_cost_per_million=0.25) == "configured: 0 USD in, 0.25 USD out per million tokens"


@pytest.mark.parametrize(("url", "host"), [
    ("http://127.0.0.1:8080/v1", "127.0.0.1:8080"), ("https://api.example.com/v1", "api.example.com"),
    ("http://[::1]:11434", "[::1]:11434"), ("http://a:b@h.example:9/x?k=v#f", "h.example:9"),
    ("llm.example.com:8000/v1", "llm.example.com:8000"),
])
def test_api_base_host(url: str, host: str) -> None:
    assert api_base_host(url) == host


@given(user=st.text(alphabet="abcdefXYZ019-_", min_size=1), password=st.text(alphabet="abcdefXYZ019-_.~", min_size=6),
       query=st.text(alphabet="abcdefXYZ019", min_size=6))
def test_api_base_host_never_shows_userinfo_or_query(user: str, password: str, query: str) -> None:
    shown = api_base_host(f"https://{user}:{password}@llm.example.com:8443/v1?key={query}")
    assert shown == "llm.example.com:8443"


# --- missing LLM credentials -----------------------------------------------------------------

@pytest.fixture
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FIRMSIFT_LLM_API_KEY", "FIRMSIFT_LLM_API_BASE"):
        monkeypatch.delenv(variable, raising=False)


def test_no_key_and_no_api_base_names_the_three_fixes(no_provider_keys: None) -> None:
    problem = llm_credentials_problem(Settings(llm_model="gpt-5.4-mini"))
    assert problem is not None
    assert "FIRMSIFT_LLM_API_KEY" in problem and "OPENAI_API_KEY" in problem and "FIRMSIFT_LLM_API_BASE" in problem
    with pytest.raises(MissingLLMCredentials, match="one of three ways"):
        require_llm_credentials(Settings(llm_model="gpt-5.4-mini"))


def test_an_empty_key_is_no_key(no_provider_keys: None) -> None:
    assert llm_credentials_problem(Settings(llm_model="gpt-5.4-mini", llm_api_key="")) is not None


def test_the_provider_variable_named_is_the_model_provider_s(no_provider_keys: None) -> None:
    problem = llm_credentials_problem(Settings(llm_model="anthropic/claude-sonnet-4-5"))
    assert problem is not None and "ANTHROPIC_API_KEY" in problem and "OPENAI_API_KEY" not in problem


@pytest.mark.parametrize("settings", [
    {"llm_api_key": "sk-x"},  # FIRMSIFT_LLM_API_KEY
    {"llm_api_base": "http://127.0.0.1:8080/v1", "llm_model": "openai/local"},  # a server of one's own
    {"llm_model": "bedrock/anthropic.claude-3"},  # an AWS credential chain may hold the credentials
    {"llm_model": "nosuchprovider/model"},  # litellm cannot tell what it needs
])
def test_credentials_are_not_reported_missing_when_given_or_unknowable(no_provider_keys: None, settings: dict) -> None:
    assert llm_credentials_problem(Settings(**settings)) is None


def test_the_provider_s_own_variable_is_enough(no_provider_keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-provider-variable")
    assert llm_credentials_problem(Settings(llm_model="gpt-5.4-mini")) is None


# --- unknown FIRMSIFT_* variables ------------------------------------------------------------

def test_a_typo_is_warned_with_the_nearest_name() -> None:
    [warning] = unknown_variable_warnings({"FIRMSIFT_LLM_MODLE": "x", "HOME": "/root"})
    assert warning.startswith("FIRMSIFT_LLM_MODLE is not a firmsift setting") and "FIRMSIFT_LLM_MODEL?" in warning


def test_known_settings_any_case_and_the_allow_list_are_not_warned() -> None:
    environ = {name: "x" for name in known_variables()} | {"firmsift_llm_model": "x", "OTHER_TOOL_SETTING": "x"}
    assert unknown_variable_warnings(environ) == []
    assert {"FIRMSIFT_TEST_POSTGRES_URL", "FIRMSIFT_VENV", "FIRMSIFT_CHROMIUM", "FIRMSIFT_API_KEY",
            "FIRMSIFT_TEST_WORKERS", "FIRMSIFT_BIG_LIST_ROWS"} <= set(OTHER_VARIABLES)


def test_a_name_far_from_any_setting_gets_no_guess() -> None:
    [warning] = unknown_variable_warnings({"FIRMSIFT_ZZZZZZZZ": "1"})
    assert "did you mean" not in warning


@given(name=st.sampled_from(sorted(known_variables() - set(OTHER_VARIABLES))), data=st.data())
def test_one_dropped_letter_of_a_setting_suggests_some_setting(name: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=len("FIRMSIFT_"), max_value=len(name) - 1))
    typo = name[:cut] + name[cut + 1:]
    warnings = unknown_variable_warnings({typo: "x"})
    if typo in known_variables():
        assert warnings == []
    else:
        [warning] = warnings
        assert "did you mean FIRMSIFT_" in warning


# --- settings, configuration and database errors: one line -----------------------------------

def test_settings_errors_are_one_line_naming_each_variable_and_no_value() -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(database_url="mysql://root:db-password-3@h/db", max_domains_per_job=0)
    line = startup_error_line(raised.value)
    assert line is not None and "\n" not in line
    assert "FIRMSIFT_DATABASE_URL: unsupported database 'mysql'" in line and "FIRMSIFT_MAX_DOMAINS_PER_JOB" in line
    assert "db-password-3" not in line


def test_configuration_file_errors_are_one_line_naming_the_file(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRMSIFT_CONFIG_FILE", str(tmp_path / "firmsift.toml"))
    with pytest.raises(tomllib.TOMLDecodeError) as raised:
        tomllib.loads("database_url = ")
    assert startup_error_line(raised.value) == (
        f"invalid configuration: {tmp_path / 'firmsift.toml'}: Invalid value (at end of document)")
    assert startup_error_line(ConfigurationError("FIRMSIFT_CONFIG_FILE=x: no such file")) == \
        "invalid configuration: FIRMSIFT_CONFIG_FILE=x: no such file"


def test_an_unopenable_sqlite_file_is_one_line(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path}")  # a directory, not a file
    with pytest.raises(DatabaseUnavailable) as raised:
        upgrade(engine)
    line = startup_error_line(raised.value, database=describe_database(f"sqlite:///{tmp_path}"))
    assert line == f"cannot use the database sqlite:///{tmp_path}: unable to open database file"


def test_an_unreachable_postgresql_server_is_one_line_without_its_password() -> None:
    with refusing_port() as port:
        url = f"postgresql://firmsift:db-password-3@127.0.0.1:{port}/firmsift"
        with pytest.raises(DatabaseUnavailable) as raised:
            upgrade(make_engine(url))
    line = startup_error_line(raised.value, database=describe_database(url))
    assert line is not None and "\n" not in line and "db-password-3" not in line
    assert line.startswith(f"cannot use the database postgresql+psycopg://firmsift:***@127.0.0.1:{port}/firmsift: ")
    assert "Connection refused" in line


def test_an_unknown_postgresql_database_is_one_line() -> None:
    with postgres_engine(migrate=False) as server:  # skips (fails on CI) without a PostgreSQL server
        url = server.url.set(database="no_such_database_here").render_as_string(hide_password=False)
    with pytest.raises(DatabaseUnavailable) as raised:
        upgrade(make_engine(url))
    line = startup_error_line(raised.value)
    assert line is not None and "\n" not in line and 'database "no_such_database_here" does not exist' in line


def test_a_database_url_sqlalchemy_cannot_use_is_one_line_naming_the_variable() -> None:
    with pytest.raises(InvalidDatabaseUrl) as raised:
        make_engine("sqlite://relative/path")
    assert startup_error_line(raised.value) == "invalid FIRMSIFT_DATABASE_URL: Invalid SQLite URL: sqlite://relative/path"


def test_a_file_where_a_folder_is_needed_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file")
    with pytest.raises(OSError) as raised:
        make_engine(f"sqlite:///{tmp_path / 'data' / 'firmsift.db'}")
    line = startup_error_line(raised.value)
    assert line is not None and line.startswith(f"cannot use {tmp_path / 'data'}")


def test_other_errors_are_not_mapped() -> None:
    assert startup_error_line(RuntimeError("a bug")) is None
    assert startup_error_line(OSError("no file involved")) is None


# --- where the SQLite database is, and who may create it -------------------------------------

@pytest.mark.parametrize("command", ["serve", "api", "db"])
def test_serving_or_upgrading_creates_the_default_database_where_it_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert database_to_create(Settings(), command) == tmp_path / "firmsift-data" / "firmsift.db"


@pytest.mark.parametrize("command", ["worker", "keys", "companies", "replies", "dlq"])
def test_other_commands_refuse_to_create_a_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   command: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as raised:
        database_to_create(Settings(), command)
    message = str(raised.value)
    assert f"no database at {tmp_path}/firmsift-data/firmsift.db" in message
    assert f"relative to the current directory, {tmp_path}" in message and "firmsift db upgrade" in message


def test_an_existing_database_or_postgresql_needs_no_creation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "firmsift-data").mkdir()
    sqlite3.connect(tmp_path / "firmsift-data" / "firmsift.db").close()
    assert database_to_create(Settings(), "worker") is None
    assert database_to_create(Settings(database_url="postgresql://u:p@h/db"), "keys") is None
    assert database_to_create(Settings(database_url="sqlite:///:memory:"), "keys") is None


def test_eval_with_known_companies_creates_no_database(tmp_path: Path) -> None:
    """Run from the wrong directory, `eval --known-companies` must not leave an empty database
    behind, which the other commands would then take for the real one."""
    path = tmp_path / "firmsift-data" / "firmsift.db"
    backends = evaluation_backends(Settings(database_url=f"sqlite:///{path}"))
    with pytest.raises(ConfigurationError, match="no database at"):
        _known(Namespace(known_companies=True), [LabelledDomain("unilever.com", True)], backends)
    assert not path.exists() and not path.parent.exists()


def test_the_container_imports_the_http_api_only_when_it_is_built() -> None:
    """`worker`, `keys`, `answers`, `db`...: one container holds every graph, but the HTTP API
    (Starlette's app, the web app, the OpenAPI document) is imported only by `api`'s first call."""
    program = ("import sys\nfrom firmsift.entrypoints.wiring.container import Container\n"
               "print(sorted(m for m in sys.modules if m.startswith(('firmsift.entrypoints.http.', "
               "'firmsift.entrypoints.web'))))\n"
               "from firmsift.entrypoints.wiring.http import create_api\n"
               "print(create_api.__module__, 'firmsift.entrypoints.wiring.http_app' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "firmsift.entrypoints.wiring.http False"]


def test_a_misspelt_key_in_the_configuration_file_names_the_file_and_the_setting_meant(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "firmsift.toml"
    config.write_text('llm_modle = "openai/gpt-5.4-mini"\nfrobnicate = 1\n')
    monkeypatch.setenv("FIRMSIFT_CONFIG_FILE", str(config))
    with pytest.raises(ValidationError) as raised:
        Settings()
    assert startup_error_line(raised.value) == (
        f"invalid settings: llm_modle in {config} is not a setting (did you mean llm_model?); "
        f"frobnicate in {config} is not a setting (docs/reference/settings.md lists the settings)")
