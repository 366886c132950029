"""Benchmark: what a batch costs the worker over the same domains sent as jobs, and how close the
dry run's token estimate comes to what the run then used. Issue 14's goals: per-batch overhead
on the worker <= 5% (CPU seconds and wall time); the dry-run estimate of tokens within 10%.

Embedded shape (a SQLite file, the database queue), fake LLM and search servers with fixed
latencies; the fake LLM reports usage as about four characters a token of the prompt it was sent
and of its answer, so tokens vary with each domain's evidence. Each mode runs on a fresh database
with a `firmsift worker` started (and idle) before anything is submitted:

- jobs: the domains POSTed to /domains/classify, 10 a job (no reply queue);
- batch: a dry run of the same domains (fresh database: tokens from the prompt's length), then
  one POST /batches, split into jobs of 10 by the API;
- then, on the batch's database (now with its answers' tokens), a second batch of new domains
  and some already answered: dry run (tokens from the stored answers' average), then the batch.

The worker is started and, once ready, frozen (SIGSTOP) while the work is submitted, then let go
(SIGCONT); it is frozen only at a moment it holds no write lock on the SQLite file (else the
API's inserts would wait on a stopped process and answer 503). Its CPU seconds (from /proc) and the wall time run from that moment until its last job
is finished, so neither counts the client's requests nor the worker's start-up.

    .venv/bin/python -m bench.batch_overhead            # 2,000 domains
    .venv/bin/python -m bench.batch_overhead --small    # 100 domains: checks it runs, no goal
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.figures import Figure, report
from bench.harness import Latencies, jobs_finished, stack, submit
from bench.proc_stats import cpu_seconds
from tests.support.processes import Process, wait_until

OVERHEAD_GOAL = 1.05  # batch / jobs
ESTIMATE_LIMIT_PERCENT = 10.0
JOB_SIZE = 10  # FIRMSIFT_MAX_DOMAINS_PER_JOB's default: a batch's jobs are as big as the jobs sent here
LATENCIES = Latencies(llm=0.1, search=0.02)  # short: the worker's own work, not the providers', is measured
WORKER_SETTINGS = {"FIRMSIFT_WORKER_JOBS": "16", "FIRMSIFT_LLM_CONCURRENCY": "160", "FIRMSIFT_POLL_INTERVAL": "0.1"}
COUNT_TOKENS = ("--count-tokens",)


@dataclass(frozen=True)
class Run:
    """One mode's run: the worker's CPU seconds and the wall time, and the tokens the run used."""

    cpu_seconds: float
    wall_seconds: float
    tokens_in: int = 0
    tokens_out: int = 0


@dataclass(frozen=True)
class Estimate:
    """A dry run's expected tokens, and what they rest on."""

    tokens_in: int
    tokens_out: int
    basis: str


def run(folder: Path, domains: int, small: bool = False) -> list[Figure]:
    names = [f"https://www.firm{n}.example.com/" for n in range(domains)]
    as_jobs = _jobs_run(folder / "jobs", names)
    with stack("embedded", folder / "batch", LATENCIES, llm_options=COUNT_TOKENS) as services:
        _api, base = services.api()
        worker = services.worker("worker", WORKER_SETTINGS)
        with httpx.Client(base_url=base, timeout=300) as client:
            first_estimate = _dry_run(client, names)
            database = folder / "batch" / "firmsift.db"
            as_batch = _batch_run(worker, client, names, database, jobs_before=0)
            # A second list: new domains, a fifth already answered (cached), duplicates as CSV exports have.
            second = [f"https://www.other{n}.example.com/" for n in range(domains)] + names[: domains // 5]
            second += second[: domains // 10]
            second_estimate = _dry_run(client, second)
            second_batch = _batch_run(worker, client, second, database, jobs_before=-(-domains // JOB_SIZE))
    goal = None if small else OVERHEAD_GOAL
    # What else the machine ran shows in its load average, read when the runs end (not a fixed label).
    load = f"load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores"
    return [
        Figure("batch_overhead", "embedded", f"worker CPU, {domains:,} domains as one batch vs as jobs of {JOB_SIZE}",
               round(as_batch.cpu_seconds, 1), "s", reference=round(as_jobs.cpu_seconds, 1),
               reference_name="as jobs", goal=goal, note=load),
        Figure("batch_overhead", "embedded",
               f"worker wall time, {domains:,} domains as one batch vs as jobs of {JOB_SIZE}",
               round(as_batch.wall_seconds, 1), "s", reference=round(as_jobs.wall_seconds, 1),
               reference_name="as jobs", goal=goal, note=f"work queued, worker let go to last job finished; {load}"),
        # With no history the estimate rests on typical evidence and answer sizes, which the fake
        # providers do not have: shown, with no goal (BENCHMARKS.md says why).
        *_estimate_figures(f"{domains:,} new domains, fresh database", first_estimate, as_batch, goal=None),
        *_estimate_figures(f"{len(second):,} rows, {domains // 5:,} cached", second_estimate, second_batch,
                           goal=None if small else 1.0),
    ]


def _jobs_run(folder: Path, names: list[str]) -> Run:
    with stack("embedded", folder, LATENCIES, llm_options=COUNT_TOKENS) as services:
        _api, base = services.api()
        worker, probe = services.worker("worker", WORKER_SETTINGS)
        _freeze(worker, folder / "firmsift.db")
        with httpx.Client(base_url=base, timeout=300) as client:
            for start in range(0, len(names), JOB_SIZE):
                submit(client, names[start:start + JOB_SIZE])
        return _released(worker, probe, -(-len(names) // JOB_SIZE))


def _freeze(worker: Process, database: Path) -> None:
    """SIGSTOP the worker at a moment it holds no write lock on `database`: stopped inside a
    write, it would keep every other writer (the API) waiting until it is let go."""
    deadline = time.monotonic() + 60
    while True:
        worker.popen.send_signal(signal.SIGSTOP)
        probe = sqlite3.connect(database, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            worker.popen.send_signal(signal.SIGCONT)
            time.sleep(0.05)
        finally:
            probe.close()


def _batch_run(worker: tuple[Process, str], client: httpx.Client, rows: list[str], database: Path, *,
               jobs_before: int) -> Run:
    """POST the rows as one batch, the worker having finished `jobs_before` jobs; wait for every
    job of the batch; what the worker spent and what the batch's answers used."""
    process, probe = worker
    _freeze(process, database)
    response = client.post("/batches", json={"classifier": "cpg", "domains": rows})
    if response.status_code != 202:
        process.popen.send_signal(signal.SIGCONT)
        raise RuntimeError(f"POST /batches answered {response.status_code}: {response.text[:500]}")
    accepted = response.json()
    run = _released(process, probe, jobs_before + -(-accepted["accepted"] // JOB_SIZE))
    progress = client.get(f"/batches/{accepted['batch_id']}").json()
    if progress["status"] != "DONE" or progress["failed"]:
        raise RuntimeError(f"the batch did not end well: {json.dumps(progress)[:500]}")
    return Run(run.cpu_seconds, run.wall_seconds, progress["spend"]["tokens_in"], progress["spend"]["tokens_out"])


def _dry_run(client: httpx.Client, rows: list[str]) -> Estimate:
    response = client.post("/batches?dry_run=true", json={"classifier": "cpg", "domains": rows})
    if response.status_code != 200:
        raise RuntimeError(f"the dry run answered {response.status_code}: {response.text[:500]}")
    llm = response.json()["llm"]
    return Estimate(llm["tokens_in"], llm["tokens_out"], llm["tokens_basis"])


def _released(worker: Process, probe: str, jobs: int) -> Run:
    """Let the frozen worker go; its CPU seconds and the wall time until it has finished `jobs` jobs."""
    cpu_before, began = cpu_seconds(worker.popen.pid), time.monotonic()
    worker.popen.send_signal(signal.SIGCONT)
    wait_until(lambda: _finished(probe) >= jobs, 1800, f"the worker did not finish {jobs} jobs", interval=0.2)
    return Run(cpu_seconds(worker.popen.pid) - cpu_before, time.monotonic() - began)


def _finished(probe: str) -> int:
    """Jobs the worker has finished; -1 while its probe is too slow to answer (a loaded machine)."""
    try:
        return jobs_finished(probe)
    except httpx.TimeoutException:
        return -1


def _estimate_figures(what: str, estimate: Estimate, used: Run, goal: float | None) -> list[Figure]:
    figures = []
    for kind, expected, spent in (("tokens_in", estimate.tokens_in, used.tokens_in),
                                  ("tokens_out", estimate.tokens_out, used.tokens_out)):
        error = 100 * abs(expected - spent) / spent if spent else float("inf")
        figures.append(Figure(
            "batch_estimate", "embedded", f"dry-run {kind} vs used, {what}", round(error, 1), "% off",
            reference=ESTIMATE_LIMIT_PERCENT, reference_name="issue 14's limit", goal=goal,
            note=f"estimated {expected:,}, used {spent:,}; basis: {estimate.basis}"))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.batch_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="100 domains: checks that it runs")
    parser.add_argument("--out", type=Path, help="write the figures and the machine as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="firmsift-bench-overhead-") as folder:
        figures = run(Path(folder), 100 if args.small else 2_000, small=args.small)
    report(figures, args.out, small=args.small, latencies={"llm": LATENCIES.llm, "search": LATENCIES.search})
    return 0 if all(f.met is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
