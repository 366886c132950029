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

from tests.support.processes import REPO, Processes, refusing_port, start_api

pytestmark = pytest.mark.e2e


def firmsift(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def test_help_lists_every_command_and_exit_codes() -> None:
    result = firmsift("--help")
    assert result.returncode == 0
    for command in ("serve", "api", "worker", "classify", "companies", "replies", "db", "llm"):
        assert command in result.stdout
    assert "Exit codes" in result.stdout
    for command in (["serve"], ["api"], ["worker"], ["classify"], ["companies", "import"], ["replies"], ["db", "upgrade"],
                    ["llm", "check"]):
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


MESSY_EXPORT = (
    "Company;Official website;Notes\r\n"
    'Kimberly-Clark;www.kimberly-clark.com /en-us /;"Irving,\nTexas"\r\n'
    "Kroger;thekrogerco.com kroger.com;\r\n"
    "Axos;investors.axosfinancial.com /corporate-profile /default.aspx;\r\n"
    "Blank;;\r\n"
    "Words;Official website;\r\n"
    "City Bank;https://www.citybank.com/;\r\n"
    "Broken;broken-answer.com;\r\n"
    "Mail;info@acme-snacks.com;\r\n"
    "Acme;ACME-SNACKS.com/;\r\n"
    "Kimberly again;kimberly-clark.com;\r\n"
)


def test_serve_then_classify_a_messy_csv_keeping_rows_columns_and_order(tmp_path: Path) -> None:
    processes = Processes(tmp_path)
    try:
        script = tmp_path / "llm-script.json"
        script.write_text(json.dumps({"*": {"broken-answer.com": {"content": "I would rather not say."}}}))
        _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--script", str(script))
        _search, search_port = processes.start_fake("tests.support.fake_search_server")
        processes.env = {
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
            "FIRMSIFT_LLM_MODEL": "openai/fake-model",
            "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
            # A local server has no price unless given one: with these, each fake answer (10 tokens
            # in, 10 out) costs 10 * 1.5e-6 + 10 * 2.5e-6 = 0.00004 USD.
            "FIRMSIFT_LLM_INPUT_COST_PER_MILLION": "1.5",
            "FIRMSIFT_LLM_OUTPUT_COST_PER_MILLION": "2.5",
            "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
            "FIRMSIFT_MAX_DOMAINS_PER_JOB": "3",
            "FIRMSIFT_WAIT_TIME": "1",
        }
        serve, base = start_api(processes, "serve", command="serve")

        source = tmp_path / "export.csv"
        source.write_bytes(MESSY_EXPORT.encode("utf-8-sig"))  # Excel's "CSV UTF-8", a `;` locale
        out = tmp_path / "out.csv"
        env = {**processes.env}
        result = firmsift("classify", "--csv", str(source), "--column", "official website", "--api", base,
                          "--batch-size", "3", "--poll-interval", "0.2", "-o", str(out), env=env)
        assert result.returncode == 3, result.stderr  # finished, with rows rejected or failed
        assert "column 'Official website' of 3, utf-8-sig, delimiter ';'" in result.stderr
        for line in ('line 4: took thekrogerco.com from "thekrogerco.com kroger.com" (not used: kroger.com)',
                     'line 6: rejected "": blank cell', 'line 7: rejected "Official website": no host name',
                     'line 10: rejected "info@acme-snacks.com": holds an email address',
                     "line 9: failed broken-answer.com: ",
                     # six domains asked once each (Kimberly-Clark's second row reuses the first answer)
                     "10 rows: 6 answered, 1 failed, 3 rejected; LLM cost 0.00024 USD\n"):
            assert line in result.stderr
        assert not (tmp_path / "out.csv.part").exists()
        raw = out.read_bytes()
        assert raw.startswith(b"\xef\xbb\xbf")  # the input had a BOM: Excel reads the output as UTF-8 too
        header, *rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline=""), delimiter=";"))
        source_rows = list(csv.reader(io.StringIO(MESSY_EXPORT, newline=""), delimiter=";"))
        assert header == [*source_rows[0], "classified_domain", "status", "answer", "confidence", "reason", "source",
                          "evidence", "evidence_status", "search_provider", "evidence_reused_from",
                          "evidence_searched_at", "quote", "quote_status", "site_status",
                          "redirected_to", "redirected_answer", "tokens_in", "tokens_out", "cost_usd",
                          "answer_tokens_in", "answer_tokens_out", "answer_cost_usd", "error", "job_id"]
        assert [r[:3] for r in rows] == source_rows[1:]  # every row, every input cell, in input order
        answers = [(r[0], r[3], r[4], r[5]) for r in rows]
        assert answers == [
            ("Kimberly-Clark", "kimberly-clark.com", "DONE", "true"), ("Kroger", "thekrogerco.com", "DONE", "true"),
            ("Axos", "investors.axosfinancial.com", "DONE", "true"), ("Blank", "", "REJECTED", ""),
            ("Words", "", "REJECTED", ""), ("City Bank", "citybank.com", "DONE", "false"),
            ("Broken", "broken-answer.com", "FAILED", ""), ("Mail", "", "REJECTED", ""),
            ("Acme", "acme-snacks.com", "DONE", "true"), ("Kimberly again", "kimberly-clark.com", "DONE", "true")]
        assert {r[11] for r in rows if r[4] == "DONE"} == {"searxng"}  # whose evidence each answer used
        assert rows[6][25] and f"line 9: failed broken-answer.com: {rows[6][25]}" in result.stderr
        assert len({r[26] for r in rows if r[26]}) == 2  # 6 unique domains in jobs of <= 3
        assert {r[16] for r in rows} == {""}  # the pre-check is off here (tests/support/processes.py)
        # Each LLM call, the unreadable answer's too, was billed; written fixed-point. A rejected row costs nothing
        # and says nothing (empty cells).
        assert {(r[4], *r[19:25]) for r in rows} == {
            ("DONE", "10", "10", "0.00004", "10", "10", "0.00004"), ("FAILED", "10", "10", "0.00004", "10", "10", "0.00004"),
            ("REJECTED", "", "", "", "", "", "")}
        # The fake model quotes the fake search's snippet: every answer's quote verifies.
        assert {(r[4], r[15]) for r in rows} == {("DONE", "verified"), ("FAILED", ""), ("REJECTED", "")}
        assert all(r[14] for r in rows if r[4] == "DONE")

        as_json = firmsift("classify", "acme-snacks.com", "--api", base, "--format", "json", env=env)
        assert as_json.returncode == 0, as_json.stderr
        [answer] = json.loads(as_json.stdout)
        assert answer["source"] == "cache" and answer["answer"] is True and answer["input"] == {"domain": "acme-snacks.com"}
        assert answer["search_provider"] == "searxng"  # kept with the cached answer
        # Reused: this job spent nothing; the answer's own call cost what it cost then.
        assert (answer["tokens_in"], answer["cost_usd"], answer["answer_tokens_in"], answer["answer_cost_usd"]) == (
            0, 0, 10, 0.00004)
        assert "1 rows: 1 answered, 0 failed, 0 rejected; LLM cost 0 USD\n" in as_json.stderr
        # uvicorn re-raises the SIGTERM it handled once shutdown is complete, so -15 is a clean exit here.
        assert serve.stop() in (0, -15)
        assert "Application shutdown complete" in serve.log()
    finally:
        processes.stop_all()


def test_classify_usage_and_input_errors(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("Name,Web\nA,a.com\n")
    both = firmsift("classify", "a.com", "--csv", str(source))
    assert both.returncode == 2 and "not both" in both.stderr
    assert firmsift("classify").returncode == 2
    missing = firmsift("classify", "--csv", str(source), "--column", "website", "--api", "http://127.0.0.1:9")
    assert missing.returncode == 1
    assert "no column 'website' (found: 'Name', 'Web')" in missing.stderr
    for delay in ("0", "-1", "nan"):
        refused = firmsift("classify", "a.com", "--retry-delay", delay, "--api", "http://127.0.0.1:9")
        assert refused.returncode == 2 and "--retry-delay must be more than 0 seconds" in refused.stderr


def test_classify_without_a_running_api_fails_clearly(tmp_path: Path) -> None:
    # Short retry delays: the default (1 s doubling, 6 attempts) would take 31 s to give up.
    with refusing_port() as port:
        result = firmsift("classify", "a.com", "--api", f"http://127.0.0.1:{port}", "--retry-delay", "0.01",
                          timeout=120)
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


@pytest.mark.parametrize(("command", "case", "said"), [
    ("ensure", "closed port", "SQS queue 'firmsift-jobs-dlq.fifo': could not read it: EndpointConnectionError: "
                              "Could not connect to the endpoint URL"),
    ("drift", "closed port", "SQS queue 'firmsift-jobs-dlq.fifo': could not read it: EndpointConnectionError"),
    ("drift", "no credentials", "SQS queue 'firmsift-jobs-dlq.fifo': could not read it: NoCredentialsError: "
                                "Unable to locate credentials; check the AWS credentials"),
    ("ensure", "no region", "SQS: could not make a client: NoRegionError: You must specify a region; "
                            "set FIRMSIFT_AWS_REGION"),
])
def test_queues_commands_say_in_one_line_why_sqs_cannot_be_used(tmp_path: Path, command: str, case: str,
                                                                 said: str) -> None:
    """No botocore traceback: one line naming the queue, the cause and the fix, and exit 1."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    env.update({"FIRMSIFT_QUEUE_BACKEND": "sqs", "FIRMSIFT_QUEUE_NAME": "firmsift-jobs.fifo",
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_CONFIG_FILE": str(tmp_path / "none"),
                "AWS_EC2_METADATA_DISABLED": "true"})
    if case != "no credentials":
        env.update({"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"})
    if case != "no region":
        env["FIRMSIFT_AWS_REGION"] = "us-east-1"
    with refusing_port() as port:
        env["FIRMSIFT_SQS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"
        result = subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", "queues", command],
                                capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"firmsift: {said}"), result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_classify_estimate_prints_the_dry_run_and_submits_nothing(tmp_path: Path) -> None:
    processes = Processes(tmp_path)
    database = tmp_path / "api.db"
    try:
        processes.env = {"FIRMSIFT_DATABASE_URL": f"sqlite:///{database}", "FIRMSIFT_LLM_MODEL": "fake-model",
                         "FIRMSIFT_LLM_INPUT_COST_PER_MILLION": "1.5", "FIRMSIFT_LLM_OUTPUT_COST_PER_MILLION": "2.5"}
        _api, base = start_api(processes)
        source = tmp_path / "export.csv"
        source.write_bytes(MESSY_EXPORT.encode("utf-8-sig"))  # read as `classify` reads it: BOM, `;`
        result = firmsift("classify", "--estimate", "--csv", str(source), "--column", "official website",
                          "--api", base, env=processes.env)
        arguments = firmsift("classify", "--estimate", "a.com", "A.com", "--api", base, env=processes.env)
        both = firmsift("classify", "--estimate", "a.com", "--csv", str(source), "--api", base, env=processes.env)
    finally:
        processes.stop_all()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "rows 10: 6 domains, 1 duplicates, 3 rejected"
    assert lines[2] == "to pre-check 0, to ask the LLM at most 6 (fake-model)"  # tests turn the pre-check off
    assert lines[3].startswith("tokens ") and "prompt length" in lines[3]
    assert lines[4].startswith("cost 0.0") and lines[4].endswith(" USD")
    assert lines[5].startswith("time unknown: no LLM answer of this classifier has stored its latency yet (LLM "
                               "concurrency 8, 40 domains at once per worker)"), lines[5]
    assert arguments.returncode == 0 and arguments.stdout.startswith("rows 2: 1 domains, 1 duplicates, 0 rejected")
    assert both.returncode == 2 and "one of them" in both.stderr
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM batches").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM jobs").fetchone() == (0,)


def test_classify_estimate_of_a_list_larger_than_a_batch_adds_up_its_parts(tmp_path: Path) -> None:
    """classify splits such a file into batches by itself: its estimate covers the whole file too."""
    processes = Processes(tmp_path)
    try:
        processes.env = {"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'api.db'}", "FIRMSIFT_LLM_MODEL": "fake-model",
                         "FIRMSIFT_LLM_INPUT_COST_PER_MILLION": "1.5", "FIRMSIFT_LLM_OUTPUT_COST_PER_MILLION": "2.5",
                         "FIRMSIFT_MAX_DOMAINS_PER_BATCH": "3"}
        _api, base = start_api(processes)
        domains = [f"brand{number}.com" for number in range(10)]
        result = firmsift("classify", "--estimate", *domains, "--api", base, env=processes.env)
    finally:
        processes.stop_all()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "rows 10: 10 domains, 0 duplicates, 0 rejected"
    assert lines[2] == "to pre-check 0, to ask the LLM at most 10 (fake-model)"
    assert lines[4].startswith("cost 0.0") and lines[4].endswith(" USD")


def test_db_commands_list_apply_undo_and_print_the_schema(tmp_path: Path) -> None:
    env = {"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'schema.db'}"}
    listed = firmsift("db", "history", env=env)
    assert listed.returncode == 0 and listed.stdout.splitlines()[0] == "0001 initial"
    newest = listed.stdout.splitlines()[-1].split()[0]
    sql = firmsift("db", "sql", "--dialect", "sqlite", env=env)
    assert sql.returncode == 0 and "CREATE TABLE jobs" in sql.stdout
    assert not (tmp_path / "schema.db").exists()  # neither needs a database, nor makes one
    applied = firmsift("db", "upgrade", env=env)
    assert applied.returncode == 0 and applied.stdout.startswith(f"applied {int(newest)} revision(s)\n  0001 initial")
    assert firmsift("db", "current", env=env).stdout.strip() == newest
    undone = firmsift("db", "downgrade", "0008", env=env)
    assert undone.returncode == 0 and "undid" in undone.stdout and "  0009 budgets" in undone.stdout
    assert firmsift("db", "current", env=env).stdout.strip() == "0008"
    again = firmsift("db", "upgrade", env=env)
    assert again.stdout.splitlines()[1] == "  0009 budgets"
    for args in (["db", "downgrade", "9999"], ["db", "sql", "--from", "nope"]):
        unknown = firmsift(*args, env=env)
        assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
        assert unknown.stderr.strip().endswith("(`firmsift db history` lists the revisions)"), unknown.stderr
    assert firmsift("db", "current", env=env).stdout.strip() == newest  # nothing undone


def test_classify_says_at_once_when_the_api_is_unreachable_and_ctrl_c_exits_130_saying_how_to_resume() -> None:
    import signal

    with refusing_port() as closed:
        # SIGINT as a terminal leaves it: a pytest-xdist worker ignores it, and a child inherits that.
        run = subprocess.Popen([sys.executable, "-m", "firmsift.entrypoints.cli.main", "classify", "--api",
                                f"http://127.0.0.1:{closed}", "unilever.com"], cwd=REPO, stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            assert run.stderr is not None
            first = run.stderr.readline()  # said at the first refused connection, not after ~30 s of retries
            assert first.startswith(f"firmsift: cannot reach the API at http://127.0.0.1:{closed}"), first
            assert "trying again for up to 31s" in first and "--api" in first
            run.send_signal(signal.SIGINT)
            rest = run.stderr.read()
            assert run.wait(timeout=60) == 130, rest
        finally:
            run.kill()
    assert rest.strip().splitlines()[-1] == "firmsift: interrupted; run the same command again to resume"
    assert "Traceback" not in rest


def test_classify_against_an_api_that_requires_a_key_names_the_setting(tmp_path: Path) -> None:
    processes = Processes(tmp_path)
    try:
        _api, base = start_api(processes, extra_env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'k.db'}",
                                                     "FIRMSIFT_AUTH": "required"})
        result = firmsift("classify", "--api", base, "unilever.com", env={"FIRMSIFT_API_KEY": ""})
    finally:
        processes.stop_all()
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"firmsift: the API at {base} requires an API key: pass --api-key KEY or set FIRMSIFT_API_KEY (an "
        "operator creates one with `firmsift keys create --name NAME`)")


def test_a_second_serve_on_a_taken_port_says_so_and_exits_1(tmp_path: Path) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = firmsift("serve", "--port", str(port), env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 't.db'}",
                                                              "FIRMSIFT_LLM_API_KEY": "unused"})
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"firmsift: cannot listen on 127.0.0.1:{port}: the address is in use (another firmsift serve?); choose "
        "another port with --port, or --port 0 for any free one")
