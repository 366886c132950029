"""firmsift end to end in one process, on the in-memory container: the HTTP API with its embedded
worker (as `firmsift serve` runs them) takes a job, the worker answers it, and the answer is read
back over HTTP and arrives on the caller's reply queue."""

import json
import time

from dependency_injector import providers
from starlette.testclient import TestClient

from firmsift.adapters.memory.providers import ScriptedLLM, StaticSearch
from firmsift.domain.errors import ProviderError
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.wiring.runtime import running_worker
from firmsift.entrypoints.settings import Settings

# The in-memory search finds "<domain> makes and sells packaged snacks and drinks." for every domain.
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "makes and sells packaged snacks"}'
NO = '{"is_cpg": false, "confidence": 4, "reasoning": "Sells software.", "quote": "sells CRM software to banks"}'


def test_a_job_posted_over_http_is_answered_read_back_and_replied_to() -> None:
    # A short long-poll: the worker wakes on the job at once, and stops within 0.2 s at the end.
    container = in_memory_container(Settings(wait_time=0.2))
    llm = ScriptedLLM(YES, by_domain={"crm.example.org": NO})
    container.llm.override(llm)
    # A chain of two search providers: the first fails, the second's evidence is used.
    homepage = StaticSearch(ProviderError("homepage: answered HTTP 503"), name="homepage")
    searxng = StaticSearch(name="searxng")
    container.searches.override(providers.Object((homepage, searxng)))
    app = container.api(background=lambda: running_worker(container))

    with TestClient(app) as client:
        assert client.get("/readyz").json()["status"] == "ready"
        accepted = client.post("/domains/classify", json={"domains": ["Snacks.Example.com", "crm.example.org"]},
                               headers={"X-Reply-Queue": "team"})
        assert accepted.status_code == 202, accepted.text
        location = accepted.headers["location"]
        for _ in range(500):
            shown = client.get(location).json()
            if shown["status"] not in ("PENDING", "RUNNING"):
                break
            time.sleep(0.01)
        described = client.get("/openapi.json").json()["components"]["schemas"]["Result"]

    assert shown["status"] == "DONE"
    assert [(r["domain"], r["answer"], r["source"], r["search_provider"]) for r in shown["results"]] == [
        ("snacks.example.com", True, "llm", "searxng"), ("crm.example.org", False, "llm", "searxng")]
    # A quote the evidence holds keeps its confidence; one it does not hold keeps 2 at most.
    assert [(r["confidence"], r["quote"], r["quote_status"]) for r in shown["results"]] == [
        (5, "makes and sells packaged snacks", "verified"), (2, "sells CRM software to banks", "unverified")]
    assert all(set(r) == set(described["required"]) == set(described["properties"]) for r in shown["results"])
    assert {r["quote_status"] for r in shown["results"]} <= set(described["properties"]["quote_status"]["enum"])
    [reply] = container.replies().published
    assert reply.queue == "team" and json.loads(reply.body) == shown
    assert llm.calls_about("snacks.example.com") == llm.calls_about("crm.example.org") == 1
    assert sorted(homepage.queries) == sorted(searxng.queries) == ["crm.example.org", "snacks.example.com"]


def test_get_shows_what_each_domain_cost_this_job_and_the_jobs_total() -> None:
    container = in_memory_container(Settings(wait_time=0.2))  # prices: 1 USD per million tokens in, 2 out
    container.llm.override(ScriptedLLM(YES, tokens=(1000, 100)))
    app = container.api(background=lambda: running_worker(container))

    def finished(client: TestClient, domains: list[str]) -> dict[str, object]:
        location = client.post("/domains/classify", json={"domains": domains}).headers["location"]
        for _ in range(500):
            shown = client.get(location).json()
            if shown["status"] not in ("PENDING", "RUNNING"):
                return shown
            time.sleep(0.01)
        raise AssertionError("the job did not finish")

    with TestClient(app) as client:
        first = finished(client, ["a.example.com"])
        second = finished(client, ["a.example.com", "b.example.com"])  # a.example.com now from the cache
        schemas = client.get("/openapi.json").json()["components"]["schemas"]

    cost = (1000 * 1.0 + 100 * 2.0) / 1_000_000
    assert [(r["source"], r["tokens_in"], r["tokens_out"], r["cost_usd"], r["answer_cost_usd"])
            for r in second["results"]] == [("cache", 0, 0, 0.0, cost), ("llm", 1000, 100, cost, cost)]
    assert first["total"] == second["total"] == {"tokens_in": 1000, "tokens_out": 100, "cost_usd": cost,
                                                 "cost_unknown_domains": 0}
    assert set(second) == set(schemas["Job"]["required"]) == set(schemas["Job"]["properties"]) - {"error", "warning"}
    assert schemas["Job"]["properties"]["total"] == {"$ref": "#/components/schemas/JobTotal"}
    assert set(second["total"]) == set(schemas["JobTotal"]["required"])
    assert all(set(r) == set(schemas["Result"]["required"]) for r in second["results"])
