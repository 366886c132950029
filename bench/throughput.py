"""Benchmark 2, worker throughput: many jobs of unique domains through `firmsift worker` (one
process, or several sharing the LLM concurrency limit C), against the limit of C calls per LLM latency."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.figures import Figure
from bench.harness import Latencies, Stack, domains, jobs_finished, stack, submit
from bench.proc_stats import children, memory, tree_cpu_seconds
from tests.support.processes import wait_until

GOAL = 0.9  # at least this share of the limit
POLL_INTERVAL = 0.1


@dataclass(frozen=True)
class WorkerShape:
    concurrency: int  # the LLM concurrency limit C, all processes together
    processes: int = 1  # `firmsift worker --processes N`: each copy takes C / N

    @property
    def label(self) -> str:
        split = f" over {self.processes} processes" if self.processes > 1 else ""
        return f"C={self.concurrency}{split}"


@dataclass(frozen=True)
class ThroughputSize:
    jobs: int
    domains: int  # per job, all unique
    shapes: tuple[WorkerShape, ...]


FULL = ThroughputSize(jobs=200, domains=10, shapes=(WorkerShape(16), WorkerShape(64), WorkerShape(64, 2)))
SMALL = ThroughputSize(jobs=5, domains=10, shapes=(WorkerShape(16), WorkerShape(16, 2)))


def jobs_in_hand(llm_concurrency: int, domains_per_job: int) -> int:
    """FIRMSIFT_WORKER_JOBS for a limit C: enough jobs that about 2C domains are in hand, so
    domains still searching or being saved never leave an LLM slot idle."""
    return math.ceil(2 * llm_concurrency / domains_per_job) + 1


def run(shapes: list[str], folder: Path, latencies: Latencies, size: ThroughputSize) -> list[Figure]:
    figures = []
    for shape in shapes:
        with stack(shape, folder / f"throughput-{shape}", latencies) as services:
            _api, base = services.api()
            for workers in size.shapes:
                figures += _measure(services, base, workers, shape, latencies, size)
    return figures


def _measure(services: Stack, base: str, workers: WorkerShape, shape: str, latencies: Latencies,
             size: ThroughputSize) -> list[Figure]:
    per_process = workers.concurrency // workers.processes
    settings = {"FIRMSIFT_LLM_CONCURRENCY": str(per_process),
                "FIRMSIFT_WORKER_JOBS": str(jobs_in_hand(per_process, size.domains))}
    name = f"worker-c{workers.concurrency}-p{workers.processes}"
    if workers.processes == 1:
        worker, probe = services.worker(name, settings)
        probes = [probe]
    else:
        worker, probes = services.worker_group(workers.processes, name, settings)
    pid = worker.popen.pid
    cpu_before = tree_cpu_seconds(pid)
    started = time.monotonic()
    with httpx.Client(base_url=base, timeout=30) as client:
        job_ids = [submit(client, domains(f"{name}-job{j}", size.domains)) for j in range(size.jobs)]
        wait_until(lambda: _finished(probes) >= size.jobs, 60 + 10 * size.jobs,
                   "the workers did not finish every job", interval=POLL_INTERVAL)
        seconds = time.monotonic() - started
        cpu = tree_cpu_seconds(pid) - cpu_before
        # One process: its own peak; several: the copies' peaks added up (the parent only waits).
        peak = sum(memory(copy).peak_resident_mib for copy in (children(pid) if workers.processes > 1 else [pid]))
        statuses = {client.get(f"/domains/classify/{j}").json()["status"] for j in job_ids}
    worker.stop()
    if statuses != {"DONE"}:
        raise RuntimeError(f"jobs ended {statuses}, not all DONE")
    answered = size.jobs * size.domains
    label = workers.label
    memory_name = "worker peak resident memory" if workers.processes == 1 else "workers' peak resident memory, added"
    return [
        Figure("throughput", shape, f"{label}: domains per second ({size.jobs} jobs x {size.domains})",
               answered / seconds, "domains/s", workers.concurrency / latencies.llm,
               "C / LLM latency", GOAL, direction="at_least"),
        Figure("throughput", shape, f"{label}: worker CPU", cpu / seconds, "cores",
               note=f"{1000 * cpu / answered:.1f} ms per domain"),
        Figure("throughput", shape, f"{label}: {memory_name}", peak, "MiB"),
    ]


def _finished(probes: list[str]) -> int:
    """Jobs the workers have finished; 0 while a probe is too slow to answer (a worker starved of
    CPU by other processes on the machine: the next poll asks again)."""
    try:
        return jobs_finished(*probes)
    except httpx.TimeoutException:
        return 0
