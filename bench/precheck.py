"""The pre-check's savings and cost: `.venv/bin/python -m bench.precheck [--small] [--out FILE]`.

1,000 generated domains whose mix follows the field's figures (60% live, 15% parked, 10% no
DNS, 5% unreachable, 5% blocked, 5% redirected), answered by the real worker use-case
(process_job) with the real pre-check: dnspython against a DNS server on loopback, the homepage
reader against loopback sites pinned like FIRMSIFT_HOMEPAGE_RESOLVE, the packaged signatures.
The LLM is scripted with a fixed answer time (--llm-latency, 1 s as in the other benchmarks).
Measured with the pre-check on and off: LLM calls per domain and time per domain over the whole
list (jobs of 10, run concurrently), and the answer time of a live domain asked alone (the
pre-check's overhead where it saves nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from firmsift.adapters.dns.dnspython_resolver import DnspythonResolver
from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.adapters.search.homepage import HomepageSearch
from firmsift.domain.clock import utc_now
from firmsift.domain.model import Job, JobStatus
from firmsift.services.precheck import Precheck
from firmsift.services.process import JobDependencies, process_job
from firmsift.services.search_chain import SearchChain
from tests.support.loopback_dns import LoopbackDns, Zone
from tests.support.processes import refusing_port
from tests.support.site_server import Page, SiteServer, fixture_page, redirect

MIX = {"live": 0.60, "parked": 0.15, "no_dns": 0.10, "unreachable": 0.05, "blocked": 0.05, "redirected": 0.05}
PARKED_PAGES = ["parked_sedo_page", "parked_bodis_lander", "parked_dan_com", "parked_godaddy_free_parking",
                "parked_for_sale_notice", "parked_parkingcrew_page", "parked_porkbun", "parked_namesilo"]
WALLS = ["blocked_cloudflare_managed_challenge", "blocked_akamai_access_denied", "blocked_datadome",
         "blocked_perimeterx_press_and_hold", "blocked_anubis", "blocked_recaptcha_429", "blocked_sucuri"]
LIVE_FIXTURES = ["live_article_about_bots", "live_contact_form_with_captchas", "live_for_sale_in_normal_text",
                 "live_mentions_cloudflare_and_challenge_platform", "live_protected_by_datadome_perimeterx_imperva"]
ADDRESS = "203.0.113.10"
# A worker's defaults: FIRMSIFT_WORKER_JOBS jobs at once, FIRMSIFT_DOMAIN_CONCURRENCY domains of
# each, FIRMSIFT_LLM_CONCURRENCY LLM calls; and FIRMSIFT_DNS_TIMEOUT's resolver limits.
JOB_SIZE = 10
CONCURRENT_JOBS = 4
LLM_SLOTS = 8
PRICING = FixedPricing(0.0, 0.0)  # cost is not what this benchmark measures
DNS_LIMITS = {"timeout": 2.0, "lifetime": 4.0, "total_timeout": 6.0}


@dataclass(frozen=True)
class World:
    """The generated list (domain -> its intended status), its DNS zone and its sites."""

    domains: dict[str, str]
    zone: Zone
    pages: dict[str, Page]
    unreachable: tuple[str, ...]


def generate(count: int) -> World:
    kinds = [kind for kind, share in MIX.items() for _ in range(round(share * count))]
    zone, pages, domains, unreachable = Zone(), {}, {}, []
    for index, kind in enumerate(kinds):
        domain = f"{kind.replace('_', '-')}-{index:04d}.com"
        domains[domain] = kind
        if kind == "no_dns":
            continue  # not in the zone: NXDOMAIN
        if kind == "parked" and index % 2 == 0:
            zone.add(f"{domain}.", "A", ["64.190.63.111"])
            zone.add(f"{domain}.", "NS", ["ns1.sedoparking.com.", "ns2.sedoparking.com."])
            continue
        zone.add(f"{domain}.", "A", [ADDRESS])
        if kind == "unreachable":
            unreachable.append(domain)
        elif kind == "parked":
            pages[domain] = fixture_page(PARKED_PAGES[index % len(PARKED_PAGES)])[1]
        elif kind == "blocked":
            pages[domain] = fixture_page(WALLS[index % len(WALLS)])[1]
        elif kind == "redirected":
            pages[domain] = redirect(f"http://www.group-{index:04d}.com/brands/{domain}")
            pages[f"www.group-{index:04d}.com"] = Page(body=b"<title>Group</title><p>Our brands make snacks.</p>")
        elif index % 4 == 0:
            pages[domain] = fixture_page(LIVE_FIXTURES[index % len(LIVE_FIXTURES)])[1]
        else:
            pages[domain] = Page(body=f"<title>{domain}</title><p>{domain} makes and sells packaged snacks "
                                      f"and drinks.</p>".encode())
    return World(domains, zone, pages, tuple(unreachable))


@dataclass
class Run:
    """One pass over the list with the pre-check on or off."""

    precheck: bool
    seconds: float
    llm_calls: int
    domains: int
    by_status: Counter[str]
    live_alone: list[float]

    def figures(self) -> dict[str, object]:
        return {"precheck": self.precheck, "domains": self.domains, "llm_calls": self.llm_calls,
                "llm_calls_per_domain": round(self.llm_calls / self.domains, 3),
                "seconds_per_domain": round(self.seconds / self.domains, 4), "wall_seconds": round(self.seconds, 1),
                "site_statuses": dict(sorted(self.by_status.items())),
                "live_domain_alone_mean_s": round(statistics.mean(self.live_alone), 4),
                "live_domain_alone_median_s": round(statistics.median(self.live_alone), 4)}


async def one_pass(world: World, dns_port: int, pinned: dict[str, tuple[str, int | None]], *, precheck: bool,
                   llm_latency: float, live_sample: int) -> Run:
    catalog = load_catalog()
    signatures = load_signatures()
    # The settings' defaults: FIRMSIFT_SEARCH_TIMEOUT per request, FIRMSIFT_SEARCH_DEADLINE in all.
    homepage = HomepageSearch(allow_private_addresses=True, pinned=pinned, signatures=signatures, timeout=10.0,
                              total_timeout=30.0)
    resolver = DnspythonResolver(nameservers=["127.0.0.1"], port=dns_port, **DNS_LIMITS)
    store, llm = InMemoryStore(), ScriptedLLM(delay=llm_latency)

    def dependencies() -> JobDependencies:
        return JobDependencies(jobs=store, answers=store, known=store, llm=llm, catalog=catalog, pricing=PRICING,
                               search=SearchChain([homepage, StaticSearch(name="searxng")]),
                               llm_slots=asyncio.Semaphore(LLM_SLOTS), domain_concurrency=JOB_SIZE,
                               precheck=Precheck(resolver, homepage, signatures) if precheck else None)

    deps = dependencies()
    names = list(world.domains)
    jobs = [names[start:start + JOB_SIZE] for start in range(0, len(names), JOB_SIZE)]
    running = asyncio.Semaphore(CONCURRENT_JOBS)

    async def run(number: int, domains: list[str], job_deps: JobDependencies) -> Job:
        async with running:
            job_id = f"{'on' if precheck else 'off'}-{number}"
            await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.PENDING, created_at=utc_now(),
                                       domains=tuple(domains)))
            job = await process_job(job_id, job_deps)
            assert job is not None and job.status is JobStatus.DONE, job
            return job

    started = time.perf_counter()
    finished = await asyncio.gather(*(run(n, domains, deps) for n, domains in enumerate(jobs)))
    seconds = time.perf_counter() - started
    by_status = Counter(r.site_status or "not checked" for job in finished for r in job.results)
    calls = len(llm.history)
    # A live domain asked alone, on a fresh store: the whole answer (pre-check, search, LLM) timed.
    live = [d for d, kind in world.domains.items() if kind == "live"][:live_sample]
    store = InMemoryStore()
    alone = dependencies()
    timings = []
    for number, domain in enumerate(live):
        began = time.perf_counter()
        await run(10_000 + number, [domain], alone)
        timings.append(time.perf_counter() - began)
    await homepage.aclose()
    return Run(precheck, seconds, calls, len(names), by_status, timings)


def serve(count: int, conn: Connection) -> None:
    """The list's DNS server and sites, in a process of their own (so the worker's event loop and
    the servers do not share one interpreter), until told to stop."""
    world = generate(count)
    with LoopbackDns(world.zone) as dns, SiteServer(dict(world.pages)) as sites:
        conn.send((dns.port, sites.port))
        conn.recv()


async def measure(count: int, llm_latency: float, live_sample: int) -> list[Run]:
    world = generate(count)
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    servers = context.Process(target=serve, args=(count, theirs), daemon=True)
    servers.start()
    try:
        dns_port, site_port = ours.recv()
        with refusing_port() as closed:
            pinned = {**{host: ("127.0.0.1", site_port) for host in world.pages},
                      **{domain: ("127.0.0.1", closed) for domain in world.unreachable}}
            runs = []
            for precheck in (True, False):
                print(f"pre-check {'on' if precheck else 'off'}...", file=sys.stderr, flush=True)
                runs.append(await one_pass(world, dns_port, pinned, precheck=precheck, llm_latency=llm_latency,
                                           live_sample=live_sample))
    finally:
        ours.send("stop")
        servers.join(10)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.precheck", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="100 domains, 0.1 s LLM: a smoke run, not figures")
    parser.add_argument("--llm-latency", type=float, help="seconds per scripted LLM answer (default 1.0)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    count, latency, sample = (100, 0.1, 5) if args.small else (1_000, 1.0, 40)
    runs = asyncio.run(measure(count, args.llm_latency or latency, sample))
    on, off = runs
    overhead = (statistics.mean(on.live_alone) - statistics.mean(off.live_alone)) / statistics.mean(off.live_alone)
    report = {"mix": MIX, "llm_latency_s": args.llm_latency or latency, "runs": [run.figures() for run in runs],
              "live_domain_overhead": round(overhead, 4),
              "llm_calls_goal_met": on.llm_calls / on.domains <= MIX["live"] + MIX["blocked"] + MIX["redirected"] + 0.01,
              "overhead_goal_met": overhead <= 0.05}
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
