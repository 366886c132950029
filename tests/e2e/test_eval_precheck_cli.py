"""`firmsift eval` with the pre-check on, as a user runs it: names answered by a DNS server on
loopback, homepages served by loopback sites, a scripted LLM and a fake SearXNG."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer
from tests.support.fake_search_server import FakeSearchServer
from tests.support.loopback_dns import LoopbackDns, Zone
from tests.support.processes import run_cli
from tests.support.site_server import Page, SiteServer, fixture_page

pytestmark = pytest.mark.e2e
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
LABELS = FIXTURES / "labels.csv"
PAGE = Page(body=b"<title>Welcome</title><p>We make things.</p>")
# bravo-foods.com is parked at Sedo by its name servers and golf-pet.com is not in the zone
# (NXDOMAIN): both labelled yes, the pre-check's misses. delta-retail.com is behind a Cloudflare challenge.
LIVE = ["alpha-snacks.com", "charlie-bank.com", "echo-drinks.com", "foxtrot-freight.com", "hotel-software.com"]
SITES = {**{domain: PAGE for domain in LIVE},
         "delta-retail.com": fixture_page("blocked_cloudflare_managed_challenge")[1]}
ENDED = ["bravo-foods.com", "golf-pet.com"]


def zone() -> Zone:
    names = Zone()
    for host in SITES:
        names.add(f"{host}.", "A", ["203.0.113.10"])
    names.add("bravo-foods.com.", "A", ["64.190.63.111"])
    names.add("bravo-foods.com.", "NS", ["ns1.sedoparking.com.", "ns2.sedoparking.com."])
    return names.with_canaries()


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    server.script_file(FIXTURES / "llm-script.json")
    with server:
        yield server


@pytest.fixture
def dns() -> Iterator[LoopbackDns]:
    with LoopbackDns(zone()) as server:
        yield server


@pytest.fixture
def sites() -> Iterator[SiteServer]:
    with SiteServer(dict(SITES)) as server:
        yield server


@pytest.fixture
def env(llm: FakeLLMServer, dns: LoopbackDns, sites: SiteServer, tmp_path: Path) -> Iterator[dict[str, str]]:
    with FakeSearchServer() as search:
        yield {
            "FIRMSIFT_LLM_API_BASE": llm.base_url,
            "FIRMSIFT_SEARCH_PROVIDER": "homepage,searxng",
            "FIRMSIFT_SEARXNG_URL": search.base_url,
            "FIRMSIFT_LLM_RETRY_ATTEMPTS": "1",
            "FIRMSIFT_SEARCH_RETRY_ATTEMPTS": "1",
            "FIRMSIFT_SEARCH_TIMEOUT": "2",
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
            "FIRMSIFT_PRECHECK": "true",
            "FIRMSIFT_DNS_SERVERS": "127.0.0.1",
            "FIRMSIFT_DNS_PORT": str(dns.port),
            "FIRMSIFT_HOMEPAGE_ALLOW_PRIVATE_ADDRESSES": "true",
            "FIRMSIFT_HOMEPAGE_RESOLVE": sites.resolve_setting(),
        }


def evaluate(env: dict[str, str], tmp_path: Path, *extra: str, report: str) -> tuple[dict, str]:
    candidates = tmp_path / "candidates.toml"
    candidates.write_text('[[candidate]]\nname = "model-b"\nmodel = "openai/model-b"\n')  # scripted: always right
    result = run_cli(env, "eval", str(LABELS), "--candidates", str(candidates), "--snapshots",
                     str(tmp_path / "snapshots"), "--no-cache", "--output", str(tmp_path / report), *extra)
    assert result.returncode == 0, result.stderr
    return json.loads((tmp_path / report / "report.json").read_text()), result.stdout


def asked(llm: FakeLLMServer, since: int = 0) -> set[str]:
    labelled = [line.split(",")[0] for line in LABELS.read_text().splitlines()[1:]]
    return {d for d in labelled for r in llm.requests[since:] if f"Domain: {d}" in json.dumps(r.body)}


@pytest.mark.long(100)
def test_ended_domains_are_reported_apart_recorded_and_replayed(env: dict[str, str], tmp_path: Path,
                                                                llm: FakeLLMServer, dns: LoopbackDns,
                                                                sites: SiteServer) -> None:
    document, stdout = evaluate(env, tmp_path, "--record", report="recorded")
    assert {host for host, _ in sites.requests} == set(SITES)  # the ended domains' homepages were never asked
    candidate = document["candidates"][0]
    statuses = {o["domain"]: o["site_status"] for o in candidate["outcomes"]}
    assert statuses == {**{d: "live" for d in LIVE}, "delta-retail.com": "blocked",
                        "bravo-foods.com": "parked", "golf-pet.com": "no_dns"}
    assert asked(llm) == set(LIVE) | {"delta-retail.com"}  # the ended domains cost no LLM call
    wall = [r for r in llm.requests if "Domain: delta-retail.com" in json.dumps(r.body)]
    assert wall and not any("Just a moment" in json.dumps(r.body) for r in wall)  # the wall is never cited
    metrics = candidate["metrics"]
    assert (metrics["total"], metrics["correct"], metrics["accuracy"]) == (6, 6, 1.0)
    assert (metrics["precheck_ended"], metrics["precheck_misses"]) == (ENDED, ENDED)
    assert document["precheck"]["by_status"] == {"blocked": 1, "live": 5, "no_dns": 1, "parked": 1}
    assert "Pre-check misses (ended, yet labelled yes): 2: bravo-foods.com, golf-pet.com" in stdout
    assert "| bravo-foods.com | yes ✗ | parked |" in (tmp_path / "recorded" / "report.md").read_text()

    looked, calls = dns.queries, len(llm.requests)
    replayed, _ = evaluate(env, tmp_path, "--replay", report="replayed")
    assert dns.queries == looked  # the recorded statuses: no DNS lookup
    assert {o["domain"]: o["site_status"] for o in replayed["candidates"][0]["outcomes"]} == statuses
    assert asked(llm, calls) == set(LIVE) | {"delta-retail.com"}

    # The recording searched no ended domain: replaying it without the pre-check lacks their evidence.
    refused = run_cli(env, "eval", str(LABELS), "--snapshots", str(tmp_path / "snapshots"), "--replay",
                      "--no-precheck", "--output", str(tmp_path / "refused"))
    assert refused.returncode == 2 and "2 domain(s): bravo-foods.com, golf-pet.com" in refused.stderr

    calls = len(llm.requests)
    unchecked, stdout = evaluate(env, tmp_path, "--no-precheck", report="unchecked")
    assert asked(llm, calls) == set(statuses)  # every domain sent to the LLM
    assert {o["site_status"] for o in unchecked["candidates"][0]["outcomes"]} == {None}
    assert unchecked["precheck"]["enabled"] is False and "Pre-check: off" in stdout
    assert unchecked["candidates"][0]["metrics"]["total"] == 8
