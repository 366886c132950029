"""Benchmark: throughput at the provider's limits. A scripted provider enforces R requests and T
tokens per minute as OpenAI does (429 + Retry-After and x-ratelimit-* headers); one batch of
domains, enough for a few minutes at those limits, goes through `firmsift worker --processes N`
(N = 1, then 3) on a fresh SQLite file (or, with --postgres, a fresh PostgreSQL database with the
queue in it), the workers pacing themselves through the database.
Issue 16's goals: sustained throughput >= 95% of the provider's limit, 429s <= 1% of calls,
zero failed domains, with 1 and with 3 worker processes.

    .venv/bin/python -m bench.provider_limits            # R = 600/min, T = 600,000/min: ~3 minutes a run
    .venv/bin/python -m bench.provider_limits --small    # 40 domains at T = 384,000/min: checks it runs, no goal
    .venv/bin/python -m bench.provider_limits --postgres # the same on PostgreSQL (127.0.0.1:5432)
    .venv/bin/python -m bench.provider_limits --limit-tokens 2000000   # requests bind instead
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.figures import Figure, report
from bench.harness import COMMON_SETTINGS
from bench.proc_stats import tree_cpu_seconds
from tests.support.postgres import postgres_engine
from tests.support.processes import Processes, start_api, wait_until

THROUGHPUT_GOAL = 0.95  # of the provider's binding limit
RATE_LIMITED_GOAL = 0.01  # of the calls


@dataclass(frozen=True)
class Limits:
    requests: int  # per minute
    tokens: int
    domains: int  # one LLM call each, about 1,100 tokens as the scripted provider bills them


# Tokens bind first (about 530 calls a minute), requests close behind (600): both are paced.
FULL = Limits(requests=600, tokens=600_000, domains=1500)
# Small: still paced by T (16 calls at once would go many times faster), in a quarter of the time.
SMALL = Limits(requests=960, tokens=384_000, domains=40)
LLM_LATENCY = 0.3
SEARCH_LATENCY = 0.05
WORKER_SETTINGS = {"FIRMSIFT_LLM_CONCURRENCY": "16", "FIRMSIFT_WORKER_JOBS": "8"}


@dataclass(frozen=True)
class Run:
    requests_fraction: float  # of R, from the first LLM call to the last
    tokens_fraction: float  # of T
    rate_limited: int
    calls: int
    failed: int
    wall_seconds: float
    worker_cpu_seconds: float


@contextmanager
def database(folder: Path, postgres: bool) -> Iterator[str]:
    """The URL of a fresh database: a SQLite file in `folder`, or a new PostgreSQL database."""
    if not postgres:
        yield f"sqlite:///{folder / 'firmsift.db'}"
        return
    with postgres_engine() as engine:
        yield engine.url.render_as_string(hide_password=False)


def run_once(folder: Path, limits: Limits, processes_count: int, database_url: str) -> Run:
    folder.mkdir(parents=True)
    processes = Processes(folder)
    llm_log = folder / "llm-calls.jsonl"
    try:
        _, llm_port = processes.start_fake(
            "tests.support.fake_llm_server", "--delay", str(LLM_LATENCY), "--keep-alive", "--log", str(llm_log),
            "--limit-requests", str(limits.requests), "--limit-tokens", str(limits.tokens))
        _, search_port = processes.start_fake("tests.support.fake_search_server", "--delay", str(SEARCH_LATENCY))
        processes.env = {**COMMON_SETTINGS, "FIRMSIFT_DATABASE_URL": database_url,
                         "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
                         "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}"}
        _, base = start_api(processes)
        domains = [f"company-{n}.example.com" for n in range(limits.domains)]
        with httpx.Client(base_url=base, timeout=60) as client:
            response = client.post("/batches", json={"classifier": "cpg", "domains": domains})
            response.raise_for_status()
            batch = response.json()["batch_id"]
            began = time.monotonic()
            workers = processes.firmsift("workers", "worker", "--processes", str(processes_count),
                                         extra_env=WORKER_SETTINGS)

            def finished() -> dict | None:
                document = client.get(f"/batches/{batch}").json()
                return document if document["pending"] == 0 else None

            document = wait_until(finished, limits.domains * 60 / limits.requests * 4 + 120,
                                  "the batch did not finish", interval=1.0)
            wall = time.monotonic() - began
            cpu = tree_cpu_seconds(workers.popen.pid)
    finally:
        processes.stop_all()
    calls = [json.loads(line) for line in llm_log.read_text().splitlines() if line.strip()]
    answered = [call for call in calls if call["status"] == 200]
    span = answered[-1]["time"] - answered[0]["time"]
    per_minute = 60.0 / span
    return Run(
        requests_fraction=(len(answered) - 1) * per_minute / limits.requests,
        tokens_fraction=sum(call["tokens"] for call in answered[1:]) * per_minute / limits.tokens,
        rate_limited=sum(call["status"] == 429 for call in calls), calls=len(calls),
        failed=document["failed"], wall_seconds=wall, worker_cpu_seconds=cpu)


def figures(limits: Limits, processes_count: int, measured: Run, small: bool, postgres: bool) -> list[Figure]:
    shape = f"{processes_count} worker process{'es' if processes_count > 1 else ''}"
    shape += ", PostgreSQL" if postgres else ", SQLite"
    binding = max(measured.requests_fraction, measured.tokens_fraction)
    note = (f"requests {measured.requests_fraction:.3f} of R, tokens {measured.tokens_fraction:.3f} of T; "
            f"{limits.domains:,} domains in {measured.wall_seconds:.0f} s wall, "
            f"worker CPU {measured.worker_cpu_seconds:.1f} s")
    return [
        Figure("provider_limits", shape, f"throughput at R = {limits.requests}/min, T = {limits.tokens:,}/min "
               "(the binding limit)", round(binding, 3), "of limit", reference=1.0,
               reference_name="the provider's limit", goal=None if small else THROUGHPUT_GOAL,
               direction="at_least", note=note),
        Figure("provider_limits", shape, "429 answers, share of LLM calls", round(measured.rate_limited / measured.calls, 4),
               "of calls", reference=1.0, reference_name="all calls", goal=None if small else RATE_LIMITED_GOAL,
               note=f"{measured.rate_limited} of {measured.calls} calls"),
        Figure("provider_limits", shape, "failed domains", measured.failed, "domains",
               note="goal: zero" if not small else ""),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.provider_limits", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="40 domains at T = 384,000/min: checks that it runs")
    parser.add_argument("--limit-requests", type=int, metavar="R", help=f"requests per minute (default {FULL.requests})")
    parser.add_argument("--limit-tokens", type=int, metavar="T", help=f"tokens per minute (default {FULL.tokens:,})")
    parser.add_argument("--domains", type=int, help=f"domains a run (default {FULL.domains:,})")
    parser.add_argument("--postgres", action="store_true", help="a PostgreSQL database instead of a SQLite file")
    parser.add_argument("--out", type=Path, help="write the figures and the machine as JSON here")
    args = parser.parse_args(argv)
    chosen = SMALL if args.small else FULL
    limits = Limits(args.limit_requests or chosen.requests, args.limit_tokens or chosen.tokens,
                    args.domains or chosen.domains)
    results: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="firmsift-bench-limits-") as folder:
        for count in (1, 3):
            run_folder = Path(folder) / f"processes-{count}"
            with database(run_folder, args.postgres) as url:
                measured = run_once(run_folder, limits, count, url)
            results += figures(limits, count, measured, args.small, args.postgres)
    report(results, args.out, small=args.small)
    failed = [f for f in results if f.unit == "domains" and f.value]
    return 0 if all(f.met is not False for f in results) and (args.small or not failed) else 1


if __name__ == "__main__":
    sys.exit(main())
