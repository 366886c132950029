"""Profile of the batch path in one process, without HTTP: a JSON list of URLs planned and written
through the database-queue intake (as POST /batches does after reading its body), then every
result line written (as GET /batches/{id}/results does). Prints the CPU and wall time of each,
and with --profile the functions that took the most time (cProfile, with each transaction run in
the calling thread instead of a worker thread, so that one profile sees all the work).

    .venv/bin/python -m bench.batch_profile                          # SQLite, 100,000 domains
    .venv/bin/python -m bench.batch_profile --backend postgresql     # FIRMSIFT_TEST_POSTGRES_URL's server
    .venv/bin/python -m bench.batch_profile --domains 20000 --profile
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import itertools
import pstats
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.sql import engine as sql_engine
from firmsift.adapters.sql.batch_intake import SqlBatchIntake
from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.batch_results import json_lines
from firmsift.domain.normalize import normalize_domain
from firmsift.entrypoints.http.batch_body import json_input_rows
from firmsift.services.batch_intake import SubmitBatch, submit_batch
from firmsift.services.batches import result_pages
from tests.support.databases import SQL_BACKENDS, migrated_engine

JOB_SIZE = 10  # FIRMSIFT_MAX_DOMAINS_PER_JOB's default


def _transactions_in_this_thread() -> None:
    """Run each transaction's work in the calling thread, where cProfile sees it."""

    async def in_transaction(engine, work):  # type: ignore[no-untyped-def]
        with sql_engine.database_errors(), engine.begin() as conn:
            return work(conn)

    for module in (sys.modules["firmsift.adapters.sql.batch_intake"], sys.modules["firmsift.adapters.sql.batches"]):
        module.in_transaction = in_transaction  # type: ignore[attr-defined]


async def run(engine, domains: int) -> None:  # type: ignore[no-untyped-def]
    batches = SqlBatches(SqlStore(engine))
    queue = SqlQueue(engine, "work.fifo", visibility_timeout=30, max_receives=3, poll_interval=10)
    intake = SqlBatchIntake(engine, batches, queue)
    values = [f"https://www.company{n}.example.com/" for n in range(domains)]
    numbers = itertools.count(1)
    # Ordered as the service's ids (domain/job_ids.py: time first), but the same each run.
    new_id: Callable[[], str] = lambda: str(uuid.UUID(int=next(numbers) << 80 | 0x7 << 76 | 0b10 << 62))  # noqa: E731
    command = SubmitBatch("cpg", json_input_rows(values), normalize_domain, "bench")
    cpu, wall = time.process_time(), time.perf_counter()
    submission = await submit_batch(command, catalog=load_catalog(), intake=intake, batches=batches,
                                    job_size=JOB_SIZE, max_domains=domains, new_id=new_id)
    print(f"intake:  {time.process_time() - cpu:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall, "
          f"{submission.batch.accepted:,} domains accepted")
    cpu, wall = time.process_time(), time.perf_counter()
    digest, rows = hashlib.sha256(), 0
    async for page in result_pages(submission.batch, batches):
        lines = json_lines(submission.batch, page)
        digest.update(lines.encode())
        rows += len(page)
    print(f"results: {time.process_time() - cpu:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall, {rows:,} rows "
          f"(sha256 {digest.hexdigest()[:16]}: the same ids each run, so equal output gives an equal digest)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.batch_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=SQL_BACKENDS, default="sqlite")
    parser.add_argument("--domains", type=int, default=100_000)
    parser.add_argument("--profile", action="store_true", help="print the 25 functions that took the most time")
    args = parser.parse_args(argv)
    profile = cProfile.Profile()
    if args.profile:
        _transactions_in_this_thread()
    with tempfile.TemporaryDirectory(prefix="firmsift-batch-profile-") as folder, \
            migrated_engine(args.backend, Path(folder)) as engine:
        if args.profile:
            profile.runcall(asyncio.run, run(engine, args.domains))
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        else:
            asyncio.run(run(engine, args.domains))
    return 0


if __name__ == "__main__":
    sys.exit(main())
