"""Benchmark 5, idle cost and footprint: an idle worker's CPU, and the API's and worker's memory."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.figures import Figure
from bench.harness import Latencies, domains, stack, submit, wait_finished
from bench.proc_stats import cpu_seconds, memory

CPU_LIMIT = 0.01  # cores: an idle worker must not poll busily
API_MEMORY_LIMIT = 100e6 / 2**20  # 100 MB in MiB: the API must not import litellm


@dataclass(frozen=True)
class IdleSize:
    seconds: float


FULL = IdleSize(seconds=60)
SMALL = IdleSize(seconds=3)


def run(shapes: list[str], folder: Path, latencies: Latencies, size: IdleSize) -> list[Figure]:
    figures = []
    for shape in shapes:
        with stack(shape, folder / f"idle-{shape}", latencies) as services:
            api, base = services.api()
            worker, _probe = services.worker()
            with httpx.Client(base_url=base, timeout=30) as client:  # one job first: both have done work
                wait_finished(client, submit(client, domains("idle", 1)), interval=0.1)
                for page in ("/", "/new"):  # the web app's templates loaded and compiled: the API's memory counts them
                    client.get(page).raise_for_status()
            pids = {"worker": worker.popen.pid, "api": api.popen.pid}
            before = {name: cpu_seconds(pid) for name, pid in pids.items()}
            time.sleep(size.seconds)
            cpu = {name: (cpu_seconds(pid) - before[name]) / size.seconds for name, pid in pids.items()}
            used = {name: memory(pid) for name, pid in pids.items()}
        figures += [
            Figure("idle", shape, f"idle worker CPU over {size.seconds:g} s", cpu["worker"], "cores",
                   CPU_LIMIT, "1% of a core", 1.0),
            Figure("idle", shape, f"idle API CPU over {size.seconds:g} s", cpu["api"], "cores"),
            Figure("idle", shape, "API resident memory", used["api"].resident_mib, "MiB", API_MEMORY_LIMIT,
                   "100 MB", 1.0, note=f"peak {used['api'].peak_resident_mib:.0f} MiB"),
            Figure("idle", shape, "worker resident memory", used["worker"].resident_mib, "MiB",
                   note=f"peak {used['worker'].peak_resident_mib:.0f} MiB"),
        ]
    return figures
