"""Benchmark 1, job latency: POST to DONE for one job of uncached domains, with every domain in
parallel and with domains one after another (the sequential baseline)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.figures import Figure
from bench.harness import Latencies, Stack, domains, stack, submit, wait_finished

POLL_INTERVAL = 0.01  # how often the client looks at the job: 1% of the limit at the default latencies
GOAL = 1.15  # at most this many times the limit (one search + one LLM call)


@dataclass(frozen=True)
class LatencySize:
    domains: int  # per job
    jobs: int  # measured jobs with every domain in parallel, after one warm-up job
    baseline_jobs: int  # measured jobs with domains one after another


FULL = LatencySize(domains=10, jobs=5, baseline_jobs=2)
SMALL = LatencySize(domains=3, jobs=1, baseline_jobs=1)


def run(shapes: list[str], folder: Path, latencies: Latencies, size: LatencySize) -> list[Figure]:
    figures = []
    for shape in shapes:
        with stack(shape, folder / f"latency-{shape}", latencies) as services:
            # Enough LLM slots for every domain of the job, so the limit is one search + one call.
            parallel = {"FIRMSIFT_LLM_CONCURRENCY": str(size.domains), "FIRMSIFT_DOMAIN_CONCURRENCY": str(size.domains)}
            sequential = {"FIRMSIFT_LLM_CONCURRENCY": "1", "FIRMSIFT_DOMAIN_CONCURRENCY": "1"}
            with _service(services, "parallel", parallel) as base:
                fast = _job_latencies(base, "parallel", size.domains, size.jobs)
            with _service(services, "sequential", sequential) as base:
                slow = _job_latencies(base, "sequential", size.domains, size.baseline_jobs)
        limit = latencies.one_domain
        figures += [
            Figure("latency", shape, f"job of {size.domains} domains, POST to DONE (median of {len(fast)})",
                   statistics.median(fast), "s", limit, "one search + one LLM call", GOAL,
                   note=f"worst {max(fast):.3f} s"),
            Figure("latency", shape, f"sequential baseline: domains one after another (median of {len(slow)})",
                   statistics.median(slow), "s", limit * size.domains, f"{size.domains} x (search + LLM call)"),
            Figure("latency", shape, "parallel job vs sequential baseline", statistics.median(fast), "s",
                   statistics.median(slow), "sequential baseline, same run"),
        ]
    return figures


@contextmanager
def _service(services: Stack, name: str, settings: dict[str, str]) -> Iterator[str]:
    """The shape's processes with these worker settings: `firmsift serve` on the embedded
    default, `firmsift api` + `firmsift worker` in production. Yields the API's base URL."""
    if services.shape == "embedded":
        process, base = services.serve(name, settings)
        try:
            yield base
        finally:
            process.stop()
        return
    api, base = services.api(f"{name}-api")
    worker, _probe = services.worker(f"{name}-worker", settings)
    try:
        yield base
    finally:
        worker.stop()
        api.stop()


def _job_latencies(base: str, prefix: str, count: int, jobs: int) -> list[float]:
    """Seconds from POST to DONE of `jobs` jobs run one at a time, after an unmeasured warm-up job
    (the first LLM call of a process sets up its client)."""
    with httpx.Client(base_url=base, timeout=30) as client:
        wait_finished(client, submit(client, domains(f"{prefix}-warmup", 1)), interval=POLL_INTERVAL)
        seconds = []
        for job in range(jobs):
            job_domains = domains(f"{prefix}-job{job}", count)
            started = time.monotonic()
            document = wait_finished(client, submit(client, job_domains), interval=POLL_INTERVAL)
            seconds.append(time.monotonic() - started)
            if document["status"] != "DONE" or any(r["source"] != "llm" for r in document["results"]):
                raise RuntimeError(f"job did not answer every domain from the LLM: {document}")
    return seconds
