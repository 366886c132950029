"""Issue 14 end to end: a 20,000-row messy CSV (extra caller columns, messy and garbage cells, blanks,
duplicates) through `firmsift classify --csv` against real `firmsift api` and `firmsift worker`
processes and the scripted providers, with kill -9 of the client (once the API has accepted a batch
the client has not heard of yet, and mid-download; each time run again to resume from its state
file) and of the worker (mid-run, then restarted).

Every input row must come back, in input order, with its original cells; rejected rows with their
reason; each unique valid domain asked of the LLM once, a repeat only where the killed worker took
a call down with it. FIRMSIFT_BIG_LIST_ROWS sets a smaller list (at least 2,000) for a quick local
run; run with `pytest -s` to see the figures."""

from __future__ import annotations

import csv
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from firmsift.entrypoints.cli.classify_command import CHECKPOINT_ROWS
from tests.e2e.test_cli_batches import CuttingProxy
from tests.e2e.test_faults_kill import (
    RecordingLLM,
    Stack,
    embedded_stack,
    production_stack,
    running_fakes,
    trace_repeats,
)
from tests.support.fake_search_server import FakeSearchServer
from tests.support.messy_lists import HEADER, ListRow, messy_list, write_list
from tests.support.processes import Process, wait_until

pytestmark = pytest.mark.e2e

ROWS = int(os.environ.get("FIRMSIFT_BIG_LIST_ROWS", "20000"))
# The mid-download kill waits for the client's first checkpoint of what it wrote (every
# CHECKPOINT_ROWS rows): a shorter list may be written whole before the test sees one.
SHORTEST_LIST = 2 * CHECKPOINT_ROWS
LLM_DELAY = 0.01  # seconds per scripted answer: a fast model, so the list takes minutes, not hours


def stack_settings(worker_jobs: int, domain_concurrency: int) -> dict[str, str]:
    """A worker's concurrency, its LLM calls kept equal to what it can hold between "asked" and
    "stored", so a kill -9 loses at most that many calls (see tests/e2e/test_faults_kill.py); and
    batches small enough that the list goes as several (the client halves a batch the API refuses
    as too large), so a kill can fall between two of them."""
    return {
        "FIRMSIFT_WORKER_JOBS": str(worker_jobs),
        "FIRMSIFT_DOMAIN_CONCURRENCY": str(domain_concurrency),
        "FIRMSIFT_LLM_CONCURRENCY": str(worker_jobs * domain_concurrency),
        "FIRMSIFT_MAX_DOMAINS_PER_BATCH": str(max(ROWS // 12, 50)),
    }


@pytest.fixture
def fakes() -> Iterator[tuple[RecordingLLM, FakeSearchServer]]:
    with running_fakes(LLM_DELAY) as both:
        yield both


@pytest.fixture
def embedded(tmp_path: Path, fakes: tuple[RecordingLLM, FakeSearchServer]) -> Iterator[Stack]:
    yield from embedded_stack(tmp_path, *fakes, **stack_settings(2, 5))


@pytest.fixture
def production(tmp_path: Path, fakes: tuple[RecordingLLM, FakeSearchServer]) -> Iterator[Stack]:
    # A domain takes several times as long on PostgreSQL here: more of them at once.
    yield from production_stack(tmp_path, *fakes, max_receives=20, **stack_settings(4, 10))


def saved_state(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def kill_when(process: Process, ready: Callable[[], bool], what: str, timeout: float = 600) -> None:
    """kill -9 `process` as soon as `ready()` holds, polling fast; fail if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            process.kill()
            return
        if not process.running:
            raise AssertionError(f"{process.name} exited before {what}:\n{process.log()[-3000:]}")
        time.sleep(0.005)
    raise TimeoutError(f"{process.name}: never {what} within {timeout:g}s:\n{process.log()[-3000:]}")


def check_output(out: Path, listed: list[ListRow], log: str) -> int:
    """Every input row in `out`, in input order, with its original cells, then its answer: rejected
    rows with the reason their cell calls for, the rest DONE. Returns the number of rejected rows."""
    with out.open(encoding="utf-8-sig", newline="") as handle:
        header, *written = list(csv.reader(handle))
    assert header[:len(HEADER)] == HEADER
    column = {name: index for index, name in enumerate(header)}
    assert len(written) == len(listed)
    assert [row[:len(HEADER)] for row in written] == [row.padded for row in listed]
    assert [row[len(header):] for row in written] == [row.extra for row in listed]
    rejected = [(row, line) for row, line in zip(listed, written) if row.domain is None]
    assert [line[column["status"]] for _row, line in rejected] == ["REJECTED"] * len(rejected)
    wrong_reasons = [(row.cells, line[column["error"]]) for row, line in rejected
                     if str(row.reason) not in line[column["error"]]]
    assert wrong_reasons == [], wrong_reasons[:10]
    assert all(line[column["classified_domain"]] == "" for _row, line in rejected)
    outcomes = Counter(line[column["status"]] for line in written)
    assert outcomes == {"DONE": len(listed) - len(rejected), "REJECTED": len(rejected)}, outcomes
    assert [line[column["classified_domain"]] for line in written] == [row.domain or "" for row in listed]
    assert all(line[column["answer"]] in ("true", "false") and line[column["job_id"]]
               for row, line in zip(listed, written) if row.domain is not None)
    assert f"{len(listed)} rows: {len(listed) - len(rejected)} answered, 0 failed, {len(rejected)} rejected" in log
    return len(rejected)


def classify_big_list(stack: Stack, tmp_path: Path, backend: str) -> None:
    assert ROWS >= SHORTEST_LIST, f"FIRMSIFT_BIG_LIST_ROWS must be at least {SHORTEST_LIST}, not {ROWS}"
    seed = int(os.environ.get("FIRMSIFT_CHAOS_SEED", time.time_ns() % 1_000_000))
    print(f"\nbig list[{backend}] rows={ROWS} seed={seed}")
    started = time.monotonic()
    listed = messy_list(ROWS, seed)
    source, out = tmp_path / "companies.csv", tmp_path / "classified.csv"
    write_list(source, listed)
    part, state_file = tmp_path / "classified.csv.part", tmp_path / "classified.csv.part.batch.json"
    domains = {row.domain for row in listed if row.domain is not None}
    # Every run goes through the proxy (the API is part of what a run's state is for), which counts the batches.
    proxy = CuttingProxy(stack.base)
    # Polled at the command's default interval: each poll asks the API (through the proxy) for the
    # counts of every batch: at 0.5 s, about half of the API's CPU in a 6,000-row run (py-spy).
    command = ("classify", "--csv", str(source), "--api", proxy.base_url, "--poll-interval", "1", "-o", str(out))

    first_worker, worker = stack.start_worker()
    # 1. The client, killed -9 when the API has accepted its second batch and before it hears so.
    client = stack.processes.firmsift("classify", *command)

    def kill_the_first_run(posted: int) -> None:
        if posted == 2:
            client.kill()

    proxy.on_batch_posted = kill_the_first_run
    wait_until(lambda: not client.running, 600, "the first run was never killed", interval=0.05)
    proxy.on_batch_posted = lambda posted: None
    assert proxy.batches_posted == 2, client.log()[-3000:]
    chunks_at_first_kill = len(saved_state(state_file)["chunks"])  # type: ignore[index]
    assert chunks_at_first_kill == 1  # the second batch is the API's, not yet the client's

    # 2. Run again; the worker is killed -9 with a third of the domains answered and restarted.
    client = stack.processes.firmsift("classify", *command)

    def answered() -> int:
        return stack.query("SELECT count(*) FROM answers")[0][0]

    wait_until(lambda: answered() >= len(domains) // 3, 600, "a third of the domains never got answered")
    worker.kill()
    worker_killed_at = time.time()
    stack.start_worker()
    # The client is killed -9 again once it has written part of the output. It writes nothing before
    # every domain is answered: looked at every 0.1 s until then, not every 5 ms for minutes.
    wait_until(lambda: answered() >= len(domains) or not client.running, 900, "the domains were never all answered")
    kill_when(client, lambda: (saved_state(state_file) or {}).get("written", 0) > 0, "saved what it wrote",
              timeout=900)
    written_at_second_kill = saved_state(state_file)["written"]  # type: ignore[index]

    # 3. Once more, to the end.
    client = stack.processes.firmsift("classify", *command)
    wait_until(lambda: not client.running, 900, "the third run never ended", interval=0.5)
    seconds = time.monotonic() - started
    log = client.log()
    assert client.popen.returncode == 3, log[-3000:]  # complete, with rejected rows
    assert "resuming: " in log
    assert out.exists() and not part.exists() and not state_file.exists()

    rejected = check_output(out, listed, log)

    # Each row with a domain was submitted once, in one batch: no batch was made twice by a rerun.
    batches, submitted = stack.query("SELECT count(*), sum(total) FROM batches")[0]
    assert (batches, submitted) == (proxy.batches_posted, len(listed) - rejected)
    # Nothing lost: every job done, one stored answer per domain, both queues empty.
    statuses = Counter(dict(stack.query("SELECT status, count(*) FROM jobs GROUP BY status")))
    assert set(statuses) == {"DONE"}, statuses
    assert stack.query("SELECT count(*) FROM answers")[0][0] == len(domains)
    wait_until(lambda: stack.queue_counts() == (0, 0), 30, f"messages left: {stack.queue_counts()}")

    # One LLM call per unique domain; a repeat only for a call the killed worker had in hand.
    calls = stack.llm.recorded()
    per_domain = Counter(call.domain for call in calls)
    lost, unexplained = trace_repeats(calls, {first_worker: worker_killed_at})
    print(f"big list[{backend}]: rows={len(listed)} unique_domains={len(domains)} rejected={rejected}"
          f" batches={batches} chunks_at_first_client_kill={chunks_at_first_kill}"
          f" rows_written_at_second_client_kill={written_at_second_kill} llm_calls={len(calls)}"
          f" repeated_after_worker_kill={len(lost[first_worker])} unexplained_repeats={len(unexplained)}"
          f" seconds={seconds:.1f}")
    assert set(per_domain) == domains
    assert unexplained == [], unexplained[:10]
    assert len(calls) - len(domains) == len(lost[first_worker]) <= int(stack.processes.env["FIRMSIFT_LLM_CONCURRENCY"])


@pytest.mark.long(360)
def test_a_big_messy_list_survives_kill_9_of_client_and_worker_on_the_embedded_default(
        embedded: Stack, tmp_path: Path) -> None:
    classify_big_list(embedded, tmp_path, "sqlite")


@pytest.mark.long(340)
def test_a_big_messy_list_survives_kill_9_of_client_and_worker_on_postgresql_and_sqs(
        production: Stack, tmp_path: Path) -> None:
    classify_big_list(production, tmp_path, "postgresql+sqs")
