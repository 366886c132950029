"""Economy mode: the LLM cost per domain of the same list through the normal path and through the
provider's batch API, and the domains lost when the worker is killed (-9) mid provider batch.

Real `firmsift api` and `firmsift worker` processes on SQLite; the normal path asks the scripted
chat server (tests/support/fake_llm_server.py), economy mode the scripted batch server
(tests/support/fake_openai_batch_server.py). Both report 10 prompt and 10 completion tokens per
answer, and prices are configured (1 and 2 USD per million tokens), so the ratio is firmsift's
pricing and bookkeeping of the two paths, not a provider's bill.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.proc_stats import cpu_seconds
from tests.support.fake_llm_server import FakeLLMServer
from tests.support.fake_openai_batch_server import FakeOpenAIBatchServer, Script
from tests.support.fake_search_server import FakeSearchServer
from tests.support.processes import Process, Processes, start_api, start_worker, wait_until

PACE = 2.0  # seconds each provider batch status lasts at least: a kill lands mid-batch


@contextmanager
def _stack(folder: Path, llm_base: str) -> Iterator[tuple[Processes, str, Process]]:
    """`firmsift api` and one worker on a fresh SQLite file, the LLM (or batch API) at `llm_base`."""
    folder.mkdir(parents=True)
    with FakeSearchServer() as search:
        processes = Processes(folder, env={
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{folder / 'firmsift.db'}", "FIRMSIFT_AUTH": "off",
            "FIRMSIFT_WAIT_TIME": "1", "FIRMSIFT_POLL_INTERVAL": "0.1", "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": search.base_url, "FIRMSIFT_LLM_MODEL": "openai/fake-model",
            "FIRMSIFT_LLM_API_BASE": llm_base, "FIRMSIFT_LLM_API_KEY": "sk-bench",
            "FIRMSIFT_LLM_INPUT_COST_PER_MILLION": "1", "FIRMSIFT_LLM_OUTPUT_COST_PER_MILLION": "2",
            "FIRMSIFT_ECONOMY_POLL_SECONDS": "1", "FIRMSIFT_ANSWER_LEASE_SECONDS": "3",
            "FIRMSIFT_LLM_CONCURRENCY": "16", "FIRMSIFT_WORKER_JOBS": "8",
        })
        try:
            _api, base = start_api(processes)
            worker, _probe = start_worker(processes)
            yield processes, base, worker
        finally:
            processes.stop_all()


def _finished(base: str, batch_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while (progress := httpx.get(f"{base}/batches/{batch_id}", timeout=30).json())["status"] != "DONE":
        if time.monotonic() > deadline:
            raise RuntimeError(f"batch unfinished after {timeout:.0f} s: {progress}")
        time.sleep(0.5)
    return progress


def _submit(base: str, domains: list[str], mode: str) -> str:
    answer = httpx.post(f"{base}/batches", json={"classifier": "cpg", "mode": mode, "domains": domains}, timeout=60)
    answer.raise_for_status()
    return str(answer.json()["batch_id"])


def standard(folder: Path, domains: list[str]) -> dict:
    with FakeLLMServer() as llm_base, _stack(folder, llm_base) as (_processes, base, worker):
        started = time.monotonic()
        progress = _finished(base, _submit(base, domains, "standard"), 600)
        return _figures(progress, time.monotonic() - started, [cpu_seconds(worker.popen.pid)], len(domains))


def economy(folder: Path, domains: list[str]) -> dict:
    server = FakeOpenAIBatchServer(Script(pace=PACE))
    with server, _stack(folder, server.base_url) as (processes, base, worker):
        started = time.monotonic()
        batch_id = _submit(base, domains, "economy")
        wait_until(lambda: sum(map(len, server.uploads.values())) == len(domains), 600, "questions not all sent",
                   interval=0.1)
        wait_until(lambda: len(server.created) == len(server.uploads), 60, "an upload has no batch", interval=0.05)
        killed_cpu = cpu_seconds(worker.popen.pid)
        worker.kill()
        before_kill = list(server.created)
        unfinished = sum(server.batches[b]["status"] != "completed" for b in before_kill)
        again, _probe = start_worker(processes, "worker-again")
        progress = _finished(base, batch_id, 600)
        figures = _figures(progress, time.monotonic() - started, [killed_cpu, cpu_seconds(again.popen.pid)],
                           len(domains))
        asked = [line["custom_id"] for lines in server.uploads.values() for line in lines]
        figures.update(provider_batches_before_kill=len(before_kill), unfinished_at_kill=unfinished,
                       provider_batches_after_restart=len(server.created) - len(before_kill),
                       questions_sent=len(asked), questions_sent_twice=len(asked) - len(set(asked)))
        return figures


def _figures(progress: dict, wall: float, cpu: list[float], domains: int) -> dict:
    cost = progress["spend"]["cost_usd"]
    return {"domains": domains, "done": progress["done"], "failed": progress["failed"],
            "lost": domains - progress["done"] - progress["failed"], "cost_usd": cost,
            "cost_per_domain_usd": cost / domains, "wall_seconds": round(wall, 1),
            "worker_cpu_seconds": round(sum(cpu), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.economy", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="40 domains: a smoke run, not figures")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    domains = [f"economy-{n:05d}.com" for n in range(40 if args.small else 2_000)]
    with tempfile.TemporaryDirectory(prefix="firmsift-bench-economy-") as folder:
        print("normal path...", file=sys.stderr, flush=True)
        normal = standard(Path(folder) / "standard", domains)
        print("economy mode, worker killed mid provider batch...", file=sys.stderr, flush=True)
        cheap = economy(Path(folder) / "economy", domains)
    ratio = cheap["cost_per_domain_usd"] / normal["cost_per_domain_usd"]
    report = {"standard": normal, "economy": cheap, "cost_per_domain_ratio": round(ratio, 4),
              "goal_met": abs(ratio - 0.5) < 0.005 and cheap["lost"] == 0 and cheap["failed"] == 0
              and cheap["provider_batches_after_restart"] == 0 and cheap["questions_sent_twice"] == 0}
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if report["goal_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
