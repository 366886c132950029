"""The pre-check end to end: `firmsift api` and `firmsift worker` as real processes, on SQLite and
PostgreSQL, with real domain names answered by a DNS server on loopback (FIRMSIFT_DNS_SERVERS) and
their homepages served by loopback sites (FIRMSIFT_HOMEPAGE_RESOLVE): parked, dead and unreachable
domains cost no LLM call, a walled site's evidence comes from the next search provider, and a
redirect names its target and the target's answer."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.loopback_dns import LoopbackDns, Zone
from tests.support.postgres import postgres_engine
from tests.support.processes import Processes, refusing_port, start_api, start_worker, wait_until
from tests.support.site_server import Page, SiteServer, fixture_page, redirect

pytestmark = pytest.mark.e2e

SITES = {
    "fresh-foods.com": Page(body=b"<title>Fresh Foods</title><p>We bake bread and sell it in shops.</p>"),
    "tiny-pies.com": fixture_page("parked_sedo_page")[1],
    "acme-snacks.com": fixture_page("blocked_cloudflare_managed_challenge")[1],
    "old-brand.com": redirect("http://www.parent-group.com/brands/old-brand"),
    "parent-group.com": Page(body=b"<title>Parent Group</title><p>Our brands make snacks.</p>"),
    "www.parent-group.com": Page(body=b"<title>Parent Group</title><p>Our brands make snacks.</p>"),
}
ADDRESS = "203.0.113.10"  # what the DNS says; the homepage reader connects where it is pinned


def zone() -> Zone:
    names = Zone()
    for host in [*SITES, "closed-shop.com"]:
        names.add(f"{host}.", "A", [ADDRESS])
    names.add("salty-pretzel.com.", "A", ["64.190.63.111"])
    names.add("salty-pretzel.com.", "NS", ["ns1.sedoparking.com.", "ns2.sedoparking.com."])
    return names.with_canaries()  # gone-brand.com is not there: NXDOMAIN


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'firmsift.db'}"
        return
    with postgres_engine() as engine:
        yield engine.url.render_as_string(hide_password=False)


@pytest.fixture
def stack(tmp_path: Path, database: str) -> Iterator[dict]:
    with running_stack(tmp_path, database, zone()) as running:
        yield running


@contextmanager
def running_stack(tmp_path: Path, database: str, names: Zone, **settings: str) -> Iterator[dict]:
    """The fake providers, the loopback DNS answering `names`, the sites, an API and a worker."""
    processes = Processes(tmp_path)
    llm_log = tmp_path / "llm-calls.jsonl"
    with LoopbackDns(names) as dns, SiteServer(dict(SITES)) as sites, refusing_port() as closed:
        try:
            _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--log", str(llm_log))
            _search, search_port = processes.start_fake("tests.support.fake_search_server")
            processes.env = {
                "FIRMSIFT_DATABASE_URL": database,
                "FIRMSIFT_LLM_MODEL": "openai/fake-model",
                "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
                "FIRMSIFT_SEARCH_PROVIDER": "homepage,searxng",
                "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
                "FIRMSIFT_PRECHECK": "true",
                "FIRMSIFT_DNS_SERVERS": "127.0.0.1",
                "FIRMSIFT_DNS_PORT": str(dns.port),
                "FIRMSIFT_HOMEPAGE_ALLOW_PRIVATE_ADDRESSES": "true",
                "FIRMSIFT_HOMEPAGE_RESOLVE": f"{sites.resolve_setting()},closed-shop.com=127.0.0.1:{closed}",
                "FIRMSIFT_SEARCH_TIMEOUT": "2",
                "FIRMSIFT_SEARCH_RETRY_ATTEMPTS": "1",
                "FIRMSIFT_WAIT_TIME": "1",
                "FIRMSIFT_POLL_INTERVAL": "0.1",
                **settings,
            }
            _api, base = start_api(processes)
            worker, probe = start_worker(processes)
            yield {"base": base, "llm_log": llm_log, "sites": sites, "worker": worker, "probe": probe}
        finally:
            processes.stop_all()


def classify(base: str, domains: list[str]) -> dict:
    response = httpx.post(f"{base}/domains/classify", json={"classifier": "cpg", "domains": domains})
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    return wait_until(lambda: (doc := httpx.get(f"{base}/domains/classify/{job_id}").json())["status"]
                      in ("DONE", "FAILED") and doc, 90, f"job {job_id} did not finish")


def llm_calls(log: Path) -> Counter[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    return Counter(json.loads(line)["domain"] for line in lines if line.strip())


def test_each_status_end_to_end(stack: dict, database: str) -> None:
    base = stack["base"]
    parent = classify(base, ["parent-group.com"])["results"][0]
    assert (parent["source"], parent["site_status"], parent["answer"]) == ("llm", "live", True)

    document = classify(base, ["fresh-foods.com", "tiny-pies.com", "salty-pretzel.com", "gone-brand.com",
                               "closed-shop.com", "acme-snacks.com", "old-brand.com"])
    if os.environ.get("FIRMSIFT_SHOW_EXAMPLES"):  # the README's and the report's examples
        print(json.dumps(document, indent=1))
    results = {r["domain"]: r for r in document["results"]}
    assert document["status"] == "DONE"
    assert {d: r["site_status"] for d, r in results.items()} == {
        "fresh-foods.com": "live", "tiny-pies.com": "parked", "salty-pretzel.com": "parked",
        "gone-brand.com": "no_dns", "closed-shop.com": "unreachable", "acme-snacks.com": "blocked",
        "old-brand.com": "redirected"}
    for domain in ("tiny-pies.com", "salty-pretzel.com", "gone-brand.com", "closed-shop.com"):
        result = results[domain]
        assert (result["status"], result["answer"], result["source"], result["confidence"]) == (
            "DONE", None, "precheck", None), result
    assert "Sedo; name server ns1.sedoparking.com" in results["salty-pretzel.com"]["reason"]
    assert "(Sedo)" in results["tiny-pies.com"]["reason"]
    assert "NXDOMAIN" in results["gone-brand.com"]["reason"]
    assert "refused" in results["closed-shop.com"]["reason"]

    blocked = results["acme-snacks.com"]
    assert (blocked["source"], blocked["search_provider"]) == ("llm", "searxng")
    assert not any("acme-snacks.com/" == e["url"].split("//")[-1] for e in blocked["evidence"])
    assert blocked["evidence_status"] == "found"

    redirected = results["old-brand.com"]
    assert (redirected["redirected_to"], redirected["redirected_answer"], redirected["source"]) == (
        "parent-group.com", True, "llm")

    # The worker's own checks: the pre-check's DNS, and on SQLite whether its files can be written.
    writes = {"database_writes": "ok"} if database.startswith("sqlite") else {}
    assert httpx.get(f"{stack['probe']}/readyz", timeout=10).json()["checks"] == {"dns": "ok", **writes}

    calls = llm_calls(stack["llm_log"])
    assert set(calls) == {"parent-group.com", "fresh-foods.com", "acme-snacks.com", "old-brand.com"}
    assert all(count == 1 for count in calls.values())
    # The homepage the pre-check read was the live domain's evidence: fetched once, not twice.
    assert stack["sites"].requests.count(("fresh-foods.com", "/")) == 1

    # Asked again within the TTL: the pre-check outcomes come from the cache, no new look or call.
    looks_before = len(stack["sites"].requests)
    again = classify(base, ["tiny-pies.com", "gone-brand.com"])
    assert [(r["source"], r["site_status"], r["answer"]) for r in again["results"]] == [
        ("cache", "parked", None), ("cache", "no_dns", None)]
    assert len(stack["sites"].requests) == looks_before and llm_calls(stack["llm_log"]) == calls


def test_a_resolver_that_denies_every_name_ends_no_domain_and_warns_once(tmp_path: Path) -> None:
    """This machine's resolver, as offline sandboxes, proxied networks and captive portals have it:
    NXDOMAIN for every name, the canaries (example.com, ...) included. Nothing is ended as no_dns,
    every domain is answered by the LLM, and the worker says why once."""
    domains = [f"company-{number}.com" for number in range(30)]
    with running_stack(tmp_path, f"sqlite:///{tmp_path / 'firmsift.db'}", Zone(),
                       FIRMSIFT_MAX_DOMAINS_PER_JOB="30") as running:
        document = classify(running["base"], domains)
        results = document["results"]
        assert document["status"] == "DONE" and len(results) == 30
        assert {r["site_status"] for r in results} == {"unknown"}
        assert {r["source"] for r in results} == {"llm"}
        assert all(r["answer"] is not None for r in results)
        warnings = [line for line in running["worker"].log().splitlines()
                    if "does not trust negative DNS answers" in line]
        assert len(warnings) == 1, warnings
        assert "example.com (nxdomain)" in warnings[0]
        ready = httpx.get(f"{running['probe']}/readyz", timeout=10)
        assert ready.status_code == 200  # degraded, not out of service
        assert ready.json()["checks"]["dns"].startswith("degraded: the resolver denies names that must exist")
