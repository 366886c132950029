"""Benchmark: POST /batches of 100,000 domains as one JSON list to `firmsift api` on a fresh SQLite
file (the embedded shape, database queue): wall time of the request and peak resident memory of
the API process, then the results streamed back as JSON Lines (rows per second): first as the
batch was accepted (every row PENDING), then once every domain is answered (each result saved as a
worker saves it, from this process into the API's database file), as JSON Lines and as CSV.
Issue 14's goals: accepted in <= 2 s with the API at <= 150 MB, results at >= 50,000 rows/s.

    .venv/bin/python -m bench.batch_intake            # 100,000 domains
    .venv/bin/python -m bench.batch_intake --small    # 2,000 domains: checks it runs, no goal
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.batch_profile import answer_every_domain
from bench.figures import Figure, report
from bench.proc_stats import cpu_seconds, memory
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.store import SqlStore
from tests.support.processes import Processes, start_api

ACCEPT_GOAL_SECONDS = 2.0
MEMORY_GOAL_MIB = 150 * 1000 * 1000 / (1024 * 1024)  # 150 MB
RESULTS_GOAL_ROWS_PER_SECOND = 50_000


def run(folder: Path, domains: int, small: bool = False) -> list[Figure]:
    processes = Processes(folder, env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{folder / 'bench.db'}"})
    try:
        api, base = start_api(processes)
        started_mib = memory(api.popen.pid).resident_mib
        body = json.dumps({"classifier": "cpg", "domains": [f"https://www.company{n}.example.com/" for n in range(domains)]})
        with httpx.Client(base_url=base, timeout=300) as client:
            began, cpu_before = time.monotonic(), cpu_seconds(api.popen.pid)
            response = client.post("/batches", content=body, headers={"content-type": "application/json"})
            accept_seconds = time.monotonic() - began
            accept_cpu = cpu_seconds(api.popen.pid) - cpu_before
            if response.status_code != 202 or response.json()["accepted"] != domains:
                raise RuntimeError(f"POST /batches answered {response.status_code}: {response.text[:500]}")
            peak_mib = memory(api.popen.pid).peak_resident_mib
            batch_id = response.json()["batch_id"]
            pending = _download(client, api.popen.pid, batch_id, "jsonl", domains)
            engine = make_engine(f"sqlite:///{folder / 'bench.db'}")
            try:
                asyncio.run(answer_every_domain(engine, SqlStore(engine), batch_id))
            finally:
                engine.dispose()
            answered = {form: _download(client, api.popen.pid, batch_id, form, domains) for form in ("jsonl", "csv")}
    finally:
        processes.stop_all()
    return [
        Figure("batch_intake", "embedded", f"POST /batches, {domains:,} domains (JSON, {len(body) / 1e6:.1f} MB): wall time",
               round(accept_seconds, 2), "s", reference=ACCEPT_GOAL_SECONDS, reference_name="issue 14's limit",
               goal=None if small else 1.0, note=f"API CPU {accept_cpu:.1f} s"),
        Figure("batch_intake", "embedded", "API peak resident memory (VmHWM) through the POST",
               round(peak_mib, 1), "MiB", reference=round(MEMORY_GOAL_MIB, 1), reference_name="150 MB",
               goal=None if small else 1.0, note=f"{started_mib:.0f} MiB after start-up"),
        *(Figure("batch_intake", "embedded", f"GET /batches/{{id}}/results, {domains:,} {what}",
                 round(domains / seconds), "rows/s", reference=RESULTS_GOAL_ROWS_PER_SECOND,
                 reference_name="issue 14's floor", goal=None if small else 1.0, direction="at_least",
                 note=f"API CPU {cpu:.1f} s")
          for what, (seconds, cpu) in (("rows as JSON Lines (all PENDING)", pending),
                                       ("answered rows as JSON Lines", answered["jsonl"]),
                                       ("answered rows as CSV", answered["csv"]))),
    ]


def _download(client: httpx.Client, pid: int, batch_id: str, form: str, domains: int) -> tuple[float, float]:
    """The batch's results in `form`, streamed: (wall seconds, API CPU seconds)."""
    began, cpu_before = time.monotonic(), cpu_seconds(pid)
    with client.stream("GET", f"/batches/{batch_id}/results?format={form}") as stream:
        rows = sum(1 for _ in stream.iter_lines()) - (form == "csv")  # the CSV's header line
    seconds, cpu = time.monotonic() - began, cpu_seconds(pid) - cpu_before
    if rows != domains:
        raise RuntimeError(f"{domains} rows in, {rows} out as {form}")
    return seconds, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.batch_intake", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="2,000 domains: checks that it runs")
    parser.add_argument("--out", type=Path, help="write the figures and the machine as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="firmsift-bench-batch-") as folder:
        figures = run(Path(folder), 2_000 if args.small else 100_000, small=args.small)
    report(figures, args.out, small=args.small)
    return 0 if all(f.met is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
