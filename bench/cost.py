"""Benchmark 4, cost: a workload where most domain requests repeat earlier ones, run as
overlapping jobs on two workers with one forced redelivery; LLM calls against unique domains."""

from __future__ import annotations

import json
import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.figures import Figure
from bench.harness import Latencies, Stack, stack, submit
from tests.support.processes import Process, wait_until

VISIBILITY_TIMEOUT = 3  # seconds: a stalled worker's jobs come back this soon
STALL_MARGIN = 5  # seconds the worker stays frozen beyond the visibility timeout
WAVE_GAP = 0.5  # seconds between waves of jobs, so jobs overlap without all starting at once
WORKER_SETTINGS = {"FIRMSIFT_LLM_CONCURRENCY": "16", "FIRMSIFT_WORKER_JOBS": "4"}
# Worker B takes more jobs at once: while A is frozen, B's jobs that share domains with A's wait
# on A's answer leases, and with only 4 slots B had none free to take A's messages back.
WORKER_B_SETTINGS = {**WORKER_SETTINGS, "FIRMSIFT_WORKER_JOBS": "16"}


@dataclass(frozen=True)
class CostSize:
    requests: int  # domain requests in all
    waves: int  # the jobs are submitted in this many waves
    repeat_share: float = 0.6  # of requests naming a domain an earlier job asked about
    domains_per_job: int = 10
    stall_holding: int = 4  # worker A is frozen once it has received this many jobs (all its slots)


FULL = CostSize(requests=1000, waves=10)
SMALL = CostSize(requests=50, waves=2, stall_holding=1)


def workload(size: CostSize, seed: int = 6) -> list[list[str]]:
    """Jobs of distinct domains; `repeat_share` of all requests name a domain of an earlier job."""
    rng = random.Random(seed)
    jobs = size.requests // size.domains_per_job
    unique = round(size.requests * (1 - size.repeat_share))
    later_slots = range(size.domains_per_job, jobs * size.domains_per_job)
    new_slots = set(range(size.domains_per_job)) | set(rng.sample(later_slots, unique - size.domains_per_job))
    fresh = (f"cost-{number}.com" for number in range(unique))
    asked: list[str] = []
    result = []
    for job in range(jobs):
        chosen: list[str] = []
        for slot in range(job * size.domains_per_job, (job + 1) * size.domains_per_job):
            chosen.append(next(fresh) if slot in new_slots else rng.choice([d for d in asked if d not in chosen]))
        asked += [d for d in chosen if d not in asked]
        result.append(chosen)
    return result


def run(folder: Path, latencies: Latencies, size: CostSize) -> list[Figure]:
    jobs = workload(size)
    unique = len({d for job in jobs for d in job})
    with stack("production", folder / "cost-production", latencies, visibility_timeout=VISIBILITY_TIMEOUT) as services:
        _api, base = services.api()
        # Worker A runs alone until it has taken its jobs, so the stall below always has some to
        # give back: with B already polling, B could take every message of the first waves, and A
        # could finish its jobs between two looks at what it holds (both seen on a loaded machine).
        stalled, probe = services.worker("worker-a", WORKER_SETTINGS)
        first_half = size.waves // 2
        with httpx.Client(base_url=base, timeout=30) as client:
            job_ids = _submit_waves(client, jobs, range(first_half), size.waves)
            # Stall worker A once it has received its share, for longer than the visibility timeout:
            # its messages come back to worker B while its own LLM calls are still running. Counted
            # by messages received, which only grows, not by jobs in hand, which a look can miss.
            wait_until(lambda: _messages_received(probe) >= size.stall_holding, 120,
                       f"worker A never received {size.stall_holding} jobs", interval=0.02)
            with _stalled(stalled) as stall:
                _b, probe_b = services.worker("worker-b", WORKER_B_SETTINGS)
                # B takes back what A held; unless A, on a loaded machine, finished every job it had
                # before the freeze took hold: then nothing comes back (the figure's note says so).
                wait_until(lambda: _messages_received(probe_b) >= 1 or _all_done(client, job_ids), 120,
                           "worker B never received a job, and worker A's jobs are not done")
                # Long enough for B to free a slot and take the messages back (a run with a shorter
                # stall saw none), short of the answer lease (20 s) on a quiet machine, so the stalled
                # worker still owns the calls it started and finishes them when it wakes.
                time.sleep(max(0.0, VISIBILITY_TIMEOUT + STALL_MARGIN - (time.monotonic() - stall.stopped_at)))
            job_ids += _submit_waves(client, jobs, range(first_half, size.waves), size.waves)
            wait_until(lambda: _all_done(client, job_ids), 120 + 2 * len(jobs), "not every job finished", interval=0.5)
        calls = sum(services.llm_calls().values())
        redelivered = _redelivered_jobs(services)
    return [
        Figure("cost", "production", f"LLM calls for {size.requests} domain requests ({len(jobs)} jobs)", calls,
               "calls", unique, "unique domains", 1.0,
               note=f"{100 * size.repeat_share:.0f}% repeats, {redelivered} job(s) redelivered"
                    + ("" if redelivered else ": NO REDELIVERY HAPPENED, the figure does not test one; rerun")),
    ]


def _all_done(client: httpx.Client, job_ids: list[str]) -> bool:
    return all(client.get(f"/domains/classify/{j}").json()["status"] == "DONE" for j in job_ids)


def _submit_waves(client: httpx.Client, jobs: list[list[str]], waves: range, of: int) -> list[str]:
    per_wave = -(-len(jobs) // of)
    job_ids = []
    for wave in waves:
        job_ids += [submit(client, job) for job in jobs[wave * per_wave:(wave + 1) * per_wave]]
        time.sleep(WAVE_GAP)
    return job_ids


def _messages_received(probe: str) -> float:
    metrics = httpx.get(f"{probe}/metrics", timeout=30).text
    values = dict(line.rsplit(" ", 1) for line in metrics.splitlines() if line.startswith("firmsift_queue_messages_"))
    return float(values.get("firmsift_queue_messages_received_total", 0))


@dataclass
class _Stall:
    stopped_at: float


@contextmanager
def _stalled(worker: Process) -> Iterator[_Stall]:
    """SIGSTOP for the block, then SIGCONT: a worker frozen (a long GC pause, a starved VM), not killed."""
    worker.popen.send_signal(signal.SIGSTOP)
    try:
        yield _Stall(time.monotonic())
    finally:
        worker.popen.send_signal(signal.SIGCONT)


def _redelivered_jobs(services: Stack) -> int:
    """Jobs some worker finished from a second or later delivery of their message."""
    redelivered = set()
    for process in services.processes.started:
        if not process.name.startswith("worker"):
            continue
        for line in process.log().splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("message") == "job finished" and entry.get("receive_count", 1) > 1:
                    redelivered.add(entry["job_id"])
    return len(redelivered)
