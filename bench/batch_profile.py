"""Profile of the batch path in one process, without HTTP: a JSON list of URLs planned and written
through the database-queue intake (as POST /batches does after reading its body), then every
result line written (as GET /batches/{id}/results does). Prints the CPU and wall time of each,
and with --profile the functions that took the most time (cProfile, with each transaction run in
the calling thread instead of a worker thread, so that one profile sees all the work).

    .venv/bin/python -m bench.batch_profile                          # SQLite, 100,000 domains
    .venv/bin/python -m bench.batch_profile --backend postgresql     # FIRMSIFT_TEST_POSTGRES_URL's server
    .venv/bin/python -m bench.batch_profile --domains 20000 --profile
    .venv/bin/python -m bench.batch_profile --answered   # results of a finished batch (every domain answered)
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

from sqlalchemy import text

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.sql import engine as sql_engine
from firmsift.adapters.sql.batch_intake import SqlBatchIntake
from firmsift.adapters.sql.batches import SqlBatches
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sql.store import SqlStore
from firmsift.domain.batch_results import json_lines
from firmsift.domain.model import DomainResult, Evidence, JobStatus, QuoteStatus, ResultStatus, Source
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


async def run(engine, domains: int, *, answered: bool = False) -> None:  # type: ignore[no-untyped-def]
    store = SqlStore(engine)
    batches = SqlBatches(store)
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
    if answered:
        await answer_every_domain(engine, store, submission.batch.id)
    cpu, wall = time.process_time(), time.perf_counter()
    digest, rows = hashlib.sha256(), 0
    async for page in result_pages(submission.batch, batches):
        lines = json_lines(submission.batch, page)
        digest.update(lines.encode())
        rows += len(page)
    print(f"results: {time.process_time() - cpu:.2f} s CPU, {time.perf_counter() - wall:.2f} s wall, {rows:,} rows "
          f"(sha256 {digest.hexdigest()[:16]}: the same ids each run, so equal output gives an equal digest)")


async def answer_every_domain(engine, store: SqlStore, batch_id: str) -> None:  # type: ignore[no-untyped-def]
    """What workers leave behind: each domain's result saved as a worker saves it (a DONE answer
    with three pieces of evidence, a quote and its cost), then each job DONE. Not timed."""
    wall = time.perf_counter()
    with engine.connect() as conn:
        pairs = conn.execute(text("SELECT job_id, domain FROM batch_rows WHERE batch_id = :batch AND job_id IS NOT NULL"
                                  " ORDER BY position"), {"batch": batch_id}).all()
    for n, (job_id, domain) in enumerate(pairs):
        evidence = tuple(Evidence(url=f"https://{domain}/{page}", title=f"{domain}: {page} page",
                                  snippet="We make and sell snacks, cereal and drinks in supermarkets.")
                         for page in ("", "about", "products"))
        result = DomainResult(domain=domain, status=ResultStatus.DONE, answer=n % 3 != 0, confidence=1 + n % 5,
                              reason="Sells packaged snacks to supermarkets.", source=Source.LLM, evidence=evidence,
                              evidence_status="ok", search_provider="searxng", quote="We make and sell snacks",
                              quote_status=QuoteStatus.VERIFIED, tokens_in=1500, tokens_out=60, cost_usd=0.000261,
                              answer_tokens_in=1500, answer_tokens_out=60, answer_cost_usd=0.000261,
                              site_status="live")
        await store.save_result(job_id, result, None)
    for job_id in dict.fromkeys(job_id for job_id, _ in pairs):
        await store.set_job_status(job_id, JobStatus.DONE)
    print(f"answered: {len(pairs):,} domains saved as DONE in {time.perf_counter() - wall:.1f} s (not counted below)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.batch_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=SQL_BACKENDS, default="sqlite")
    parser.add_argument("--domains", type=int, default=100_000)
    parser.add_argument("--profile", action="store_true", help="print the 25 functions that took the most time")
    parser.add_argument("--answered", action="store_true",
                        help="answer every domain before the results are read: a finished batch's results")
    args = parser.parse_args(argv)
    profile = cProfile.Profile()
    if args.profile:
        _transactions_in_this_thread()
    with tempfile.TemporaryDirectory(prefix="firmsift-batch-profile-") as folder, \
            migrated_engine(args.backend, Path(folder)) as engine:
        if args.profile:
            profile.runcall(asyncio.run, run(engine, args.domains, answered=args.answered))
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        else:
            asyncio.run(run(engine, args.domains, answered=args.answered))
    return 0


if __name__ == "__main__":
    sys.exit(main())
