"""Benchmark 3, the accept path: POST /domains/classify (10 domains) under load on loopback,
against a bare Starlette endpoint measured in the same run; `firmsift api` as one process and
as `--workers N` processes sharing one socket."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.figures import Figure
from bench.harness import Latencies, stack
from bench.loadgen import LoadResult, classify_request, closed_loop, open_loop
from bench.proc_stats import children, memory, tree_cpu_seconds
from tests.support.processes import Process, Processes

DOMAINS_PER_REQUEST = 10
THROUGHPUT_GOAL = 0.30  # at least this share of the bare endpoint's requests per second
P99_LIMIT = 0.050  # seconds, at the fixed rate


@dataclass(frozen=True)
class AcceptSize:
    warmup: float  # seconds of unmeasured load first
    seconds: float  # of each measured phase
    connections: int  # closed-loop clients
    rate: float  # open-loop requests per second
    api_processes: tuple[int, ...] = (1, 2)  # `firmsift api --workers N` for each N (1: plain `api`)


FULL = AcceptSize(warmup=2, seconds=10, connections=16, rate=200)
SMALL = AcceptSize(warmup=0.5, seconds=1, connections=4, rate=200)


@dataclass(frozen=True)
class Measured:
    most: LoadResult  # closed loop: as fast as the server answers
    paced: LoadResult  # open loop at the fixed rate
    cpu_cores: float  # the server's CPU during the closed loop (every process of it)
    resident_mib: float  # the server's, its copies' added up when it has any


def run(shapes: list[str], folder: Path, latencies: Latencies, size: AcceptSize) -> list[Figure]:
    bare_folder = folder / "accept-bare"
    bare_folder.mkdir(parents=True, exist_ok=True)
    processes = Processes(bare_folder)
    try:
        server, port = processes.start_fake("bench.bare_app")
        bare = _measure(server, port, size)
    finally:
        processes.stop_all()
    figures = _figures("bare", bare, None, size)
    for shape in shapes:
        with stack(shape, folder / f"accept-{shape}", latencies) as services:
            for count in size.api_processes:
                api, base = services.api() if count == 1 else services.api_group(count)
                figures += _figures(shape, _measure(api, int(base.rsplit(":", 1)[1]), size), bare, size, count)
                api.stop()
    return figures


def _measure(server: Process, port: int, size: AcceptSize) -> Measured:
    make = partial(classify_request, port, domains_per_request=DOMAINS_PER_REQUEST)
    pid = server.popen.pid

    async def load() -> tuple[LoadResult, LoadResult, float]:
        await closed_loop(port, lambda n: make(10**8 + n), connections=size.connections, seconds=size.warmup)
        cpu_before, started = tree_cpu_seconds(pid), time.monotonic()
        most = await closed_loop(port, lambda n: make(2 * 10**8 + n), connections=size.connections,
                                 seconds=size.seconds)
        cpu = (tree_cpu_seconds(pid) - cpu_before) / (time.monotonic() - started)
        paced = await open_loop(port, lambda n: make(3 * 10**8 + n), rate=size.rate, seconds=size.seconds)
        return most, paced, cpu

    most, paced, cpu = asyncio.run(load())
    for result in (most, paced):
        if result.failures or not result.latencies:
            raise RuntimeError(f"{server.name}: {result.failures} of {result.requests} requests failed")
    copies = children(pid) or [pid]  # `api --workers N`: the parent only watches its copies
    return Measured(most, paced, cpu, sum(memory(copy).resident_mib for copy in copies))


def _figures(shape: str, measured: Measured, bare: Measured | None, size: AcceptSize,
             api_processes: int = 1) -> list[Figure]:
    most, paced = measured.most, measured.paced
    processes = f", api --workers {api_processes}" if api_processes > 1 else ""
    closed = f"{size.connections} clients as fast as answered{processes}"
    figures = [
        Figure("accept", shape, f"requests per second, {closed}", most.per_second, "req/s",
               bare.most.per_second if bare else None, "bare Starlette, same run" if bare else "",
               THROUGHPUT_GOAL if bare else None, direction="at_least",
               note=f"p50 {1000 * most.percentile(0.5):.1f} ms, p99 {1000 * most.percentile(0.99):.1f} ms, "
                    f"server CPU {measured.cpu_cores:.2f} cores"),
        Figure("accept", shape, f"p99 latency at {size.rate:g} requests/s{processes}", paced.percentile(0.99), "s",
               P99_LIMIT, "50 ms", 1.0 if bare else None,
               note=f"p50 {1000 * paced.percentile(0.5):.1f} ms over {paced.requests} requests"),
    ]
    if bare is not None:
        figures.append(Figure("accept", shape, f"API resident memory after the load{processes}",
                              measured.resident_mib, "MiB"))
    return figures
