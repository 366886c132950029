"""`firmsift llm check` as a user runs it, against the fake LLM server replaying real servers' answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.fake_llm_server import FakeLLMServer, load_fixture


def llm_check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    # No provider key from the machine running the tests: each test says what the settings hold.
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FIRMSIFT_", "OPENAI_", "ANTHROPIC_"))}
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", "llm", "check", *args],
                          capture_output=True, text=True, env={**clean, **env}, timeout=120)


def local(server: FakeLLMServer, tmp_path: Path) -> dict[str, str]:
    return {"FIRMSIFT_LLM_MODEL": "openai/smollm2-135m", "FIRMSIFT_LLM_API_BASE": server.base_url,
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}"}


def test_the_fallback_format_is_shown_with_latency_tokens_and_the_parsed_answer(tmp_path: Path) -> None:
    server = FakeLLMServer(refuse={"json_schema": load_fixture("llama-cpp-python-json-schema-refused")})
    with server:
        result = llm_check(local(server, tmp_path), "--domain", "acme-snacks.com")

    assert result.returncode == 0, result.stderr
    lines = dict(line.split(":", 1) for line in result.stdout.splitlines())
    assert lines["model"].strip() == "openai/smollm2-135m"
    assert lines["API base"].strip() == f"127.0.0.1:{server.port} (local)"
    assert lines["response format"].strip() == "json_object with schema (after json_schema was refused)"
    assert lines["latency"].strip().endswith(" s")
    assert lines["tokens"].strip() == "10 in, 10 out"
    # A local server's model has no price unless one is configured: unknown, never 0.
    assert lines["cost"].strip() == "unknown (no price for this model: set FIRMSIFT_LLM_INPUT_COST_PER_MILLION and _OUTPUT_)"
    # The model said 4; asked without evidence, it has no quote to verify, so 2 at most, as a worker keeps it.
    assert lines["answer"].strip() == "acme-snacks.com: yes, confidence 2: fake answer for acme-snacks.com"
    assert lines["quote"].strip() == "no_evidence (no evidence is sent, so no quote can verify)"
    assert [r.format_kind for r in server.requests] == ["json_schema", "json_object+schema"]
    assert result.stderr.count("refused a response format") == 1  # the switch, logged once


def test_a_configured_price_gives_the_calls_cost(tmp_path: Path) -> None:
    with FakeLLMServer() as base_url:
        env = {"FIRMSIFT_LLM_MODEL": "openai/smollm2-135m", "FIRMSIFT_LLM_API_BASE": base_url,
               "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
               "FIRMSIFT_LLM_INPUT_COST_PER_MILLION": "0.5", "FIRMSIFT_LLM_OUTPUT_COST_PER_MILLION": "1.5"}
        result = llm_check(env)
    assert result.returncode == 0, result.stderr
    assert "cost:            0.00002 USD\n" in result.stdout  # 10 tokens at 0.5 and 10 at 1.5 per million


def test_missing_credentials_name_the_variables_and_make_no_request(tmp_path: Path) -> None:
    result = llm_check({"FIRMSIFT_LLM_MODEL": "gpt-5.4-mini"})
    assert result.returncode == 1
    assert "FIRMSIFT_LLM_API_KEY" in result.stderr and "OPENAI_API_KEY" in result.stderr
    assert "no request was made" in result.stderr and "HTTP" not in result.stderr
    assert "Traceback" not in result.stderr


def test_a_server_that_is_not_running_is_named_without_a_made_up_status(tmp_path: Path) -> None:
    server = FakeLLMServer()
    env = local(server, tmp_path)
    server.stop()  # bound, then closed: nothing listens there any more
    result = llm_check(env)
    assert result.returncode == 1
    assert f"connection refused by 127.0.0.1:{server.port}" in result.stderr
    assert "HTTP 500" not in result.stderr and "Traceback" not in result.stderr


def test_an_unreadable_answer_fails_quoting_its_start(tmp_path: Path) -> None:
    server = FakeLLMServer()
    server.enqueue("Sure! Unilever is a consumer goods company, I would say yes.")
    with server:
        result = llm_check(local(server, tmp_path))
    assert result.returncode == 1
    assert "unreadable model output: no JSON object" in result.stderr
    assert "it began: Sure! Unilever is a consumer goods company, I would say yes." in result.stderr
    assert "response format: json_schema" in result.stdout
