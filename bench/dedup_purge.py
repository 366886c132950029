"""The database queue's send time as its dedup ids pile up: `--sends` sends, one after another, to
one queue whose ids stay for the 300 s window, timed per `--step` sends, on a SQLite file and on a
new PostgreSQL database (dropped after). A send that read all of its queue's ids would grow with
them. Run: `.venv/bin/python -m bench.dedup_purge --sends 20000` (BENCHMARKS.md)."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from sqlalchemy import Engine

from firmsift.adapters.sql.queue import SqlQueue
from tests.support.databases import SQL_BACKENDS, migrated_engine


async def send_times(engine: Engine, sends: int, step: int) -> list[float]:
    """Milliseconds per send, averaged over each `step` sends in turn."""
    queue = SqlQueue(engine, "replies", visibility_timeout=30, max_receives=None, dedup_window=300)
    times, started = [], time.perf_counter()
    for number in range(1, sends + 1):
        await queue.send("{}", group_id=f"g{number}", dedup_id=f"d{number}")
        if number % step == 0:
            now = time.perf_counter()
            times.append(1000 * (now - started) / step)
            started = now
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=20_000)
    parser.add_argument("--step", type=int, default=5_000)
    args = parser.parse_args()
    for backend in SQL_BACKENDS:
        with tempfile.TemporaryDirectory() as folder, migrated_engine(backend, Path(folder)) as engine:
            report(backend, asyncio.run(send_times(engine, args.sends, args.step)), args.step)


def report(backend: str, times: list[float], step: int) -> None:
    spans = ", ".join(f"{n * step + 1:,}-{(n + 1) * step:,}: {ms:.2f}" for n, ms in enumerate(times))
    print(f"{backend}: ms per send ({spans})")


if __name__ == "__main__":
    main()
