"""End to end: `firmsift api` and `firmsift worker` as real processes on one SQLite file, with a
scripted OpenAI-compatible server and a fake SearXNG on loopback."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.processes import Processes, start_api, wait_until

pytestmark = pytest.mark.e2e
API_KEY = "sk-e2e-secret-do-not-log"


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[dict]:
    processes = Processes(tmp_path)
    llm_log = tmp_path / "llm-calls.jsonl"
    try:
        _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--delay", "0.5", "--log", str(llm_log))
        _search, search_port = processes.start_fake("tests.support.fake_search_server")
        processes.env = {
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'firmsift.db'}",
            "FIRMSIFT_LLM_MODEL": "openai/fake-model",
            "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
            "FIRMSIFT_LLM_API_KEY": API_KEY,
            "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
            "FIRMSIFT_WAIT_TIME": "1",
            "FIRMSIFT_POLL_INTERVAL": "0.1",
            "FIRMSIFT_VISIBILITY_TIMEOUT": "4",
            "FIRMSIFT_LLM_CONCURRENCY": "2",
            "FIRMSIFT_LOG_LEVEL": "DEBUG",
        }
        api, base = start_api(processes)
        yield {"processes": processes, "base": base, "db": tmp_path / "firmsift.db", "llm_log": llm_log, "api": api}
    finally:
        processes.stop_all()


def submit(base: str, domains: list[str], reply_queue: str | None = None) -> str:
    headers = {"X-Reply-Queue": reply_queue} if reply_queue else {}
    response = httpx.post(f"{base}/domains/classify", json={"classifier": "cpg", "domains": domains}, headers=headers)
    assert response.status_code == 202, response.text
    return response.json()["job_id"]


def poll(base: str, job_id: str) -> dict:
    return httpx.get(f"{base}/domains/classify/{job_id}").json()


def wait_done(base: str, job_id: str, timeout: float = 60) -> dict:
    return wait_until(lambda: (doc := poll(base, job_id))["status"] in ("DONE", "FAILED") and doc, timeout,
                      f"job {job_id} did not finish")


def llm_calls(log: Path) -> Counter[str]:
    if not log.exists():
        return Counter()
    return Counter(json.loads(line)["domain"] for line in log.read_text().splitlines() if line.strip())


def db_rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


def test_jobs_flow_from_api_to_worker_to_reply_queue(stack: dict) -> None:
    base, processes = stack["base"], stack["processes"]
    worker = processes.firmsift("worker", "worker")
    job_ids = [submit(base, [f"brand{j}-{i}.com" for i in range(5)] + ["firstbank.com"], reply_queue="team-replies")
               for j in range(3)]
    documents = [wait_done(base, job_id) for job_id in job_ids]
    for document in documents:
        assert document["status"] == "DONE"
        by_domain = {r["domain"]: r for r in document["results"]}
        assert by_domain["firstbank.com"]["answer"] is False
        for domain, result in by_domain.items():
            assert result["status"] == "DONE" and result["confidence"] in range(1, 6) and result["reason"]
            assert result["evidence"] and result["evidence"][0]["url"].startswith("https://")
            # The fake model quotes the snippet it was sent: the worker finds it there (cached answers too).
            assert result["quote_status"] == "verified" and result["quote"]
    sources = Counter(r["source"] for d in documents for r in d["results"])
    assert sources["llm"] == 16 and sources["cache"] == 2  # firstbank.com asked once, reused twice
    assert sum(llm_calls(stack["llm_log"]).values()) == 16

    # A second job for known domains: answered from the cache, no new LLM call.
    again = wait_done(base, submit(base, ["brand0-0.com", "https://www.brand1-1.com/shop"]))
    assert [r["source"] for r in again["results"]] == ["cache", "cache"]
    assert sum(llm_calls(stack["llm_log"]).values()) == 16

    replies = subprocess.run(
        [sys.executable, "-m", "firmsift.entrypoints.cli.main", "replies", "--queue", "team-replies", "--max", "10"],
        capture_output=True, text=True, env={**__import__("os").environ, **processes.env}, timeout=60,
    )
    assert replies.returncode == 0, replies.stderr
    published = [json.loads(line) for line in replies.stdout.splitlines()]
    assert sorted(p["job_id"] for p in published) == sorted(job_ids)
    assert all(p["status"] == "DONE" and len(p["results"]) == 6 for p in published)

    assert worker.stop() == 0
    for process in processes.started:
        assert API_KEY not in process.log(), f"{process.name} logged the API key"


def test_killed_worker_mid_job_the_job_still_completes_without_paying_twice(stack: dict) -> None:
    base, processes = stack["base"], stack["processes"]
    first = processes.firmsift("worker", "worker")
    domains = [f"slow{i}.com" for i in range(10)]
    job_id = submit(base, domains)
    # LLM concurrency 2 at 0.5 s a call: 10 domains take ~2.5 s. Kill once some are answered. The
    # bound is generous: under a parallel suite on 2 cores the worker alone may take 30 s to start.
    wait_until(lambda: sum(r["status"] == "DONE" for r in poll(base, job_id)["results"]) >= 3, 120,
               "worker answered nothing")
    answered_before = {r["domain"] for r in poll(base, job_id)["results"] if r["status"] == "DONE"}
    first.kill()
    assert poll(base, job_id)["status"] == "RUNNING"

    processes.firmsift("worker", "worker")
    document = wait_done(base, job_id, timeout=60)
    assert document["status"] == "DONE"
    assert all(r["status"] == "DONE" for r in document["results"])

    calls = llm_calls(stack["llm_log"])
    assert all(calls[d] == 1 for d in answered_before), calls  # never paid twice for a finished domain
    assert set(calls) == set(domains)
    # Only domains in flight at the kill can repeat: at most the LLM concurrency limit.
    assert sum(calls.values()) - len(domains) <= 2
    assert db_rows(stack["db"], "SELECT count(*), count(DISTINCT domain) FROM answers") == [(10, 10)]
    assert db_rows(stack["db"], "SELECT count(*) FROM job_domains WHERE job_id = ?".replace("?", f"'{job_id}'")) == [(10,)]


def test_api_process_never_imports_litellm_or_the_search_clients(tmp_path: Path) -> None:
    # The API must stay small (BENCHMARKS.md: under 100 MB): the LLM and the search providers'
    # HTTP clients are a worker's. The process starts the way `firmsift api` does.
    code = (
        "import sys\n"
        "from firmsift.entrypoints.cli import commands\n"
        "from firmsift.entrypoints.wiring.runtime import start_container\n"
        "from firmsift.entrypoints.settings import Settings\n"
        f"app = start_container(Settings(database_url='sqlite:///{tmp_path / 'x.db'}')).api()\n"
        "assert 'litellm' not in sys.modules, 'litellm imported'\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
        "assert 'httpx' not in sys.modules, 'httpx imported'\n"
        "assert 'tldextract' not in sys.modules, 'tldextract imported'\n"
        "assert 'selectolax' not in sys.modules, 'selectolax imported'\n"
        "assert 'jinja2' not in sys.modules, 'jinja2 imported before the web app served a page'\n"
        # A dry run prices its LLM questions from litellm's price map file, not through litellm.
        "from starlette.testclient import TestClient\n"
        "with TestClient(app) as client:\n"
        "    estimate = client.post('/batches?dry_run=true', json={'classifier': 'cpg', 'domains': ['a.com']}).json()\n"
        "assert estimate['to_ask'] == 1 and estimate['llm']['cost_usd'] > 0, estimate\n"
        "assert 'litellm' not in sys.modules, 'litellm imported by a dry run'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_classify_and_help_never_import_the_service(tmp_path: Path) -> None:
    # `firmsift classify` is an HTTP client and `--help` prints text: neither loads SQLAlchemy and
    # the adapters (the container, ~1 s of CPU per run). A classify against a closed port fails
    # with exit 1 after its retries, having imported only what a client needs.
    code = (
        "import sys\n"
        "from firmsift.entrypoints.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit as stop:\n"
        "    assert stop.code == 0, stop.code\n"
        "assert main(['classify', '--api', 'http://127.0.0.1:9', '--retry-delay', '0.01', 'a.com']) == 1\n"
        "heavy = sorted(m for m in ('sqlalchemy', 'firmsift.entrypoints.wiring.container', 'litellm') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
