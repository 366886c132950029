"""firmsift against a real OpenAI-compatible server no one here wrote: llama-cpp-python's server with
SmolLM2-135M-Instruct (Q4_1). It refuses `json_schema` with HTTP 500; firmsift must fall back to
`json_object` with the schema, say so once, remember it, and finish a 10-domain job."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.realserver.exchanges import REQUESTS, exchange, recorded
from tests.realserver.llama_server import MODEL_ALIAS, LlamaServer, require_provisioned, server_version, \
    start_llama_server
from tests.support.fake_search_server import FakeSearchServer
from tests.support.processes import Process, Processes, wait_until

pytestmark = pytest.mark.e2e

# Five CPG companies and five that are not, each with one search result saying what it does.
COMPANIES = {
    "colgatepalmolive.com": "Colgate-Palmolive makes toothpaste, toothbrushes, soap, dish liquid and Hill's pet food.",
    "kelloggs.com": "Kellogg's makes breakfast cereals and snacks such as Corn Flakes, Special K and Pringles.",
    "clorox.com": "The Clorox Company makes bleach, cleaning wipes, Glad trash bags and Burt's Bees lip balm.",
    "hersheys.com": "The Hershey Company makes chocolate bars, candy and packaged snacks sold in grocery stores.",
    "drinkolipop.com": "Olipop sells a prebiotic soda in cans through supermarkets and online.",
    "jpmorganchase.com": "JPMorgan Chase is a bank offering checking accounts, mortgages and investment banking.",
    "boeing.com": "Boeing designs and builds commercial airplanes, defense systems and satellites.",
    "deloitte.com": "Deloitte provides audit, consulting, tax and advisory services to businesses.",
    "salesforce.com": "Salesforce sells cloud customer-relationship-management software to companies.",
    "caterpillar.com": "Caterpillar makes construction and mining equipment, diesel engines and turbines.",
}
_LISTENING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    where = require_provisioned()
    processes = Processes(tmp_path_factory.mktemp("llama-cpp-server"))
    try:
        server = start_llama_server(processes, where)
        print(f"\nllama-cpp-python {server_version()} listening on port {server.port} "
              f"after {server.started_in:.1f}s (model loaded)")
        yield server
    finally:
        processes.stop_all()


def serve_port(serve: Process, timeout: float = 60) -> int:
    """The port `firmsift serve --port 0` bound, from uvicorn's start-up line in its log."""
    def listening() -> int | None:
        if not serve.running:
            raise RuntimeError(f"firmsift serve exited:\n{serve.log()}")
        found = _LISTENING.search(serve.log())
        return int(found.group(1)) if found else None

    return wait_until(listening, timeout, f"firmsift serve did not listen:\n{serve.log()}")


def format_switch_lines(log: str) -> list[str]:
    """firmsift's log lines (JSON, one a line) that report moving from json_schema to json_object:
    the words may be in the message or in its extra fields."""
    lines = []
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        text = " ".join(str(value) for value in entry.values() if isinstance(value, str)).lower()
        if "json_schema" in text and "json_object" in text:
            lines.append(line)
    return lines


def test_a_job_of_ten_domains_answers_through_the_fallback_format(llama: LlamaServer, tmp_path: Path) -> None:
    database = tmp_path / "firmsift.db"
    processes = Processes(tmp_path)
    with FakeSearchServer() as search:
        for domain, what in COMPANIES.items():
            search.script(domain, [{"url": f"https://{domain}/about", "title": f"About {domain}", "content": what}])
        processes.env = {
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{database}",
            "FIRMSIFT_LLM_MODEL": f"openai/{MODEL_ALIAS}",
            "FIRMSIFT_LLM_API_BASE": llama.api_base,
            "FIRMSIFT_LLM_API_KEY": "sk-local-server-needs-no-key",
            "FIRMSIFT_LLM_CONCURRENCY": "1",  # one slot on the server: the first refusal is the only one
            "FIRMSIFT_LLM_TIMEOUT": "120",
            "FIRMSIFT_LLM_DEADLINE": "300",
            "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": search.base_url,
            "FIRMSIFT_WAIT_TIME": "1",
            "FIRMSIFT_POLL_INTERVAL": "0.2",
            "FIRMSIFT_VISIBILITY_TIMEOUT": "600",
            "FIRMSIFT_LOG_LEVEL": "INFO",
        }
        before = llama.answered()
        try:
            serve = processes.firmsift("serve", "serve", "--port", "0")
            base = f"http://127.0.0.1:{serve_port(serve)}"
            started = time.monotonic()
            accepted = httpx.post(f"{base}/domains/classify", json={"classifier": "cpg", "domains": list(COMPANIES)})
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["job_id"]
            job = wait_until(
                lambda: (doc := httpx.get(f"{base}/domains/classify/{job_id}").json())["status"] in ("DONE", "FAILED")
                and doc, 900, f"job {job_id} did not finish", interval=0.5)
            took = time.monotonic() - started
        finally:
            processes.stop_all()
    log = serve.log()
    results = {result["domain"]: result for result in job["results"]}
    statuses = Counter(result["status"] for result in results.values())
    print(f"\n10-domain job through llama-cpp-python: {took:.1f}s, {dict(statuses)}")
    for domain, result in results.items():
        print(f"  {domain:22} {result['status']:6} answer={result['answer']} confidence={result['confidence']} "
              f"{(result['error'] or result['reason'])[:100]!r}")

    assert set(results) == set(COMPANIES)
    assert set(statuses) <= {"DONE", "FAILED"}, statuses
    with sqlite3.connect(database) as connection:
        raw = dict(connection.execute("SELECT domain, raw_output FROM answers WHERE classifier = 'cpg'"))
    # Every domain reached the model and its words are kept, answered or not: no provider failure.
    missing = {domain: (results[domain]["error"] or "")[:200] for domain in COMPANIES
               if not (raw.get(domain) or "").strip()}
    assert not missing, f"no model output kept for: {missing}"
    # The server refused json_schema once; every later call started at the remembered json_object format.
    answered = llama.answered() - before
    assert answered[500] == 1, f"chat completions by status: {dict(answered)}"
    assert answered[200] == len(COMPANIES), f"chat completions by status: {dict(answered)}"
    assert sum(answered.values()) == len(COMPANIES) + 1, f"chat completions by status: {dict(answered)}"
    switches = format_switch_lines(log)
    assert len(switches) == 1, f"expected one log line about the format switch, got {switches}"
    assert "sk-local-server-needs-no-key" not in log


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_the_recorded_answers_still_match_the_live_server(llama: LlamaServer, name: str) -> None:
    fixture = recorded(name)
    assert fixture["server_version"] == server_version(), "record again: python -m tests.realserver.exchanges"
    assert fixture["request"] == REQUESTS[name]
    live = exchange(f"http://127.0.0.1:{llama.port}", fixture["request"])
    assert live["status"] == fixture["status"]
    assert live["headers"]["content-type"] == fixture["headers"]["content-type"]
    assert shape(live["body"]) == shape(fixture["body"])
    if fixture["status"] != 200:  # a refusal is deterministic: the same words, up to the traceback's file path
        assert refusal(live["body"]) == refusal(fixture["body"])
    elif name == "chat-json-object-with-schema":
        answer = json.loads(live["body"]["choices"][0]["message"]["content"])
        assert set(answer) == {"is_cpg", "confidence", "reasoning"}


def refusal(body: dict) -> tuple[str, str]:
    """An error body's type and message, without the `File "..."` line naming where the server is installed."""
    error = body["error"]
    return error["type"], error["message"].split('  File "', 1)[0]


def shape(value: object) -> object:
    """The keys and value types of a JSON document, without the values (model output varies)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__
