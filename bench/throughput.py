"""Benchmark 2, worker throughput: many jobs of unique domains through one worker process with
an LLM concurrency limit C, against the limit of C calls per LLM latency."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.figures import Figure
from bench.harness import Latencies, domains, jobs_finished, stack, submit
from bench.proc_stats import cpu_seconds, memory
from tests.support.processes import wait_until

GOAL = 0.9  # at least this share of the limit
POLL_INTERVAL = 0.1


@dataclass(frozen=True)
class ThroughputSize:
    jobs: int
    domains: int  # per job, all unique
    concurrencies: tuple[int, ...]  # the LLM concurrency limits C to measure


FULL = ThroughputSize(jobs=200, domains=10, concurrencies=(16, 64))
SMALL = ThroughputSize(jobs=5, domains=10, concurrencies=(16,))


def jobs_in_hand(llm_concurrency: int, domains_per_job: int) -> int:
    """FIRMSIFT_WORKER_JOBS for a limit C: enough jobs that about 2C domains are in hand, so
    domains still searching or being saved never leave an LLM slot idle."""
    return math.ceil(2 * llm_concurrency / domains_per_job) + 1


def run(shapes: list[str], folder: Path, latencies: Latencies, size: ThroughputSize) -> list[Figure]:
    figures = []
    for shape in shapes:
        with stack(shape, folder / f"throughput-{shape}", latencies) as services:
            _api, base = services.api()
            for concurrency in size.concurrencies:
                worker, probe = services.worker(f"worker-c{concurrency}", {
                    "FIRMSIFT_LLM_CONCURRENCY": str(concurrency),
                    "FIRMSIFT_WORKER_JOBS": str(jobs_in_hand(concurrency, size.domains)),
                })
                cpu_before = cpu_seconds(worker.popen.pid)
                started = time.monotonic()
                with httpx.Client(base_url=base, timeout=30) as client:
                    job_ids = [submit(client, domains(f"c{concurrency}-job{j}", size.domains))
                               for j in range(size.jobs)]
                    wait_until(lambda: jobs_finished(probe) >= size.jobs, 60 + 10 * size.jobs,
                               "the worker did not finish every job", interval=POLL_INTERVAL)
                    seconds = time.monotonic() - started
                    cpu = cpu_seconds(worker.popen.pid) - cpu_before
                    used = memory(worker.popen.pid)
                    statuses = {client.get(f"/domains/classify/{j}").json()["status"] for j in job_ids}
                worker.stop()
                if statuses != {"DONE"}:
                    raise RuntimeError(f"jobs ended {statuses}, not all DONE")
                answered = size.jobs * size.domains
                label = f"C={concurrency}"
                figures += [
                    Figure("throughput", shape, f"{label}: domains per second ({size.jobs} jobs x {size.domains})",
                           answered / seconds, "domains/s", concurrency / latencies.llm,
                           "C / LLM latency", GOAL, direction="at_least"),
                    Figure("throughput", shape, f"{label}: worker CPU", cpu / seconds, "cores",
                           note=f"{1000 * cpu / answered:.1f} ms per domain"),
                    Figure("throughput", shape, f"{label}: worker peak resident memory", used.peak_resident_mib, "MiB"),
                ]
    return figures
