"""Hostile batch bodies (issue 27, items 1 and 2): the API's memory and /healthz while the costliest
bodies under FIRMSIFT_MAX_BATCH_BODY_BYTES arrive, one at a time and five at once, and while the
results of the widest batch the limits allow are read back. Goals: each body costs the API at most
100 MB over its resident memory before it, and /healthz never waits more than 100 ms.

    .venv/bin/python -m bench.hostile_batches            # bodies of up to 64 MiB
    .venv/bin/python -m bench.hostile_batches --small    # 1/16 of each: checks it runs, no goal

Each body goes to a fresh `firmsift api` (embedded shape), so its peak resident memory (VmHWM) is
that body's alone; the bodies are sent by another process, so the /healthz probe here does not
share their GIL."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import httpx

from bench.figures import Figure, report
from bench.harness import Latencies, Stack, stack
from bench.proc_stats import memory

MEMORY_GOAL_MIB = 100 * 1000 * 1000 / (1024 * 1024)  # 100 MB
HEALTHZ_GOAL = 0.100  # seconds
HEALTHZ_INTERVAL = 0.005
BODY_LIMIT = 64 * 1024 * 1024  # FIRMSIFT_MAX_BATCH_BODY_BYTES's default
AT_ONCE = 5
CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


@dataclass(frozen=True)
class Body:
    name: str
    content_type: str
    path: str  # the route and query it is sent to
    write: Callable[[BinaryIO, int], None]  # writes the body, scaled to `limit` bytes


def _json_items(item: bytes) -> Callable[[BinaryIO, int], None]:
    def write(out: BinaryIO, limit: int) -> None:
        count = (limit - 64) // (len(item) + 1)
        out.write(b'{"classifier": "cpg", "domains": [')
        block = b",".join([item] * 100_000)
        for done in range(0, count - 1, 100_000):
            out.write(block if done + 100_000 < count - 1 else b",".join([item] * (count - 1 - done)))
            out.write(b",")
        out.write(item + b"]}")
    return write


def _wide_header(out: BinaryIO, limit: int) -> None:  # the reported attack; its size is its own
    out.write(",".join(f"c{i}" for i in range(100_000)).encode() + b"\r\n")
    out.write(b"a.com\r\n" * 200)


def _long_rows(out: BinaryIO, limit: int) -> None:
    row = b"a.com," + b"x" * 64_000 + b"\r\n"
    out.write(b"domain,notes\r\n")
    for _ in range((limit - 100) // len(row)):
        out.write(row)


def _widest_allowed(out: BinaryIO, limit: int) -> None:
    out.write(",".join(f"column_{i}" for i in range(1000)).encode() + b"\r\n")
    for n in range(min(60_000, limit // 20)):
        out.write(b"d%d.example.com\r\n" % n)


def _pasted_lines(out: BinaryIO, limit: int) -> None:
    out.write(b"a\n" * (limit * 40 // 64 // 2))  # 40 MB at full size, as reported


BODIES = [
    Body("JSON: 22 million {} entries", "application/json", "/batches", _json_items(b"{}")),
    Body("JSON: [] entries", "application/json", "/batches", _json_items(b"[]")),
    Body("CSV: a 100,000-column header, 200 rows", "text/csv", "/batches?column=c0", _wide_header),
    Body("CSV: rows of 64,000 characters", "text/csv", "/batches?column=domain", _long_rows),
    Body("CSV: 1,000 columns (the limit), 60,000 rows of one cell", "text/csv", "/batches?column=column_0",
         _widest_allowed),
    Body("web preview: 40 MB of pasted 'a' lines", "text/plain", "/new/check?kind=list", _pasted_lines),
]


@dataclass(frozen=True)
class Outcome:
    body: str
    at_once: int
    statuses: list[int]
    batch_ids: list[str]
    memory_mib: float  # peak resident over resident before
    healthz_worst: float
    probes: int
    seconds: float
    body_mib: float


def _send(base: str, body_file: str, content_type: str, path: str, count: int) -> None:
    """Send `count` copies of the body at once (run in its own process); print their statuses and
    the batch ids of those accepted."""
    answers: list[tuple[int, str | None]] = []
    clients = [httpx.Client(base_url=base, timeout=1800) for _ in range(count)]
    headers = {"content-type": content_type}
    if path.startswith("/new"):  # the web app's form: its session cookie and CSRF token
        page = clients[0].get("/new")
        headers["x-csrf-token"] = CSRF.search(page.text)[1]
        for client in clients[1:]:
            client.cookies = clients[0].cookies
    barrier = threading.Barrier(count)

    def post(client: httpx.Client) -> None:
        with open(body_file, "rb") as content:
            barrier.wait()
            response = client.post(path, content=content, headers=headers)
        batch_id = response.json().get("batch_id") if response.status_code == 202 else None
        answers.append((response.status_code, batch_id))

    senders = [threading.Thread(target=post, args=(client,)) for client in clients]
    print("ready", flush=True)
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    print(json.dumps(answers), flush=True)


def _probe_while(base: str, running: Callable[[], bool]) -> list[float]:
    latencies = []
    with httpx.Client(base_url=base, timeout=60) as probe:
        probe.get("/healthz")
        while running():
            started = time.perf_counter()
            probe.get("/healthz").raise_for_status()
            latencies.append(time.perf_counter() - started)
            time.sleep(HEALTHZ_INTERVAL)
    return latencies


def _measure(services: Stack, index: int, body: Body, body_file: Path, at_once: int) -> tuple[Outcome, int, str]:
    api, base = services.api(f"api-{index}-{at_once}")
    with httpx.Client(base_url=base, timeout=60) as client:  # what the first batch loads, loaded before
        client.post("/batches?dry_run=true", json={"domains": ["warm.example.com"]})
    before = memory(api.popen.pid).resident_mib
    began = time.monotonic()
    sender = subprocess.Popen([sys.executable, "-m", "bench.hostile_batches", "--send", base, str(body_file),
                               body.content_type, body.path, str(at_once)], stdout=subprocess.PIPE, text=True)
    assert sender.stdout is not None
    sender.stdout.readline()  # ready
    probes = _probe_while(base, lambda: sender.poll() is None)
    answers = json.loads(sender.stdout.readline() or "[]")
    seconds = time.monotonic() - began
    peak = memory(api.popen.pid).peak_resident_mib
    return Outcome(body.name, at_once, [status for status, _ in answers], [i for _, i in answers if i],
                   peak - before, max(probes, default=0.0), len(probes), seconds,
                   body_file.stat().st_size / 2**20), api.popen.pid, base


def _read_results(base: str, api_pid: int, batch_id: str) -> tuple[float, float, float, int]:
    """(memory over before, worst /healthz, seconds, bytes) while the batch's results are read as JSON Lines."""
    before = memory(api_pid).resident_mib
    done = threading.Event()
    size = 0
    began = time.monotonic()

    def read() -> None:
        nonlocal size
        with httpx.Client(base_url=base, timeout=600) as client, \
                client.stream("GET", f"/batches/{batch_id}/results?format=jsonl") as response:
            for chunk in response.iter_bytes():
                size += len(chunk)
        done.set()

    reader = threading.Thread(target=read)
    reader.start()
    probes = _probe_while(base, lambda: not done.is_set())
    reader.join()
    return memory(api_pid).peak_resident_mib - before, max(probes, default=0.0), time.monotonic() - began, size


def run(folder: Path, scale: int) -> list[Figure]:
    figures: list[Figure] = []
    with stack("embedded", folder / "hostile-batches", Latencies()) as services:
        _, base = services.api("api-idle")
        began = time.monotonic()
        idle = _probe_while(base, lambda: time.monotonic() - began < 5)
        figures.append(Figure("hostile_batches", "embedded", "worst /healthz with nothing else to do (the machine's noise)",
                              max(idle), "s", HEALTHZ_GOAL, "100 ms", note=f"{len(idle)} probes over 5 s"))
        for index, body in enumerate(BODIES):
            body_file = folder / f"body-{index}"
            with body_file.open("wb") as out:
                body.write(out, BODY_LIMIT // scale)
            for at_once in ((1, AT_ONCE) if index == 0 else (1,)):
                outcome, pid, base = _measure(services, index, body, body_file, at_once)
                shown = f"{body.name} ({outcome.body_mib:.1f} MiB)" + (f", {at_once} at once" if at_once > 1 else "")
                note = f"answered {sorted(set(outcome.statuses))} in {outcome.seconds:.1f} s"
                figures.append(Figure("hostile_batches", "embedded", f"API memory: {shown}", outcome.memory_mib,
                                      "MiB", MEMORY_GOAL_MIB, "100 MB", None if scale > 1 else 1.0, note=note))
                figures.append(Figure("hostile_batches", "embedded", f"worst /healthz: {shown}", outcome.healthz_worst,
                                      "s", HEALTHZ_GOAL, "100 ms", None if scale > 1 else 1.0,
                                      note=f"{outcome.probes} probes"))
                if body.name.startswith("CSV: 1,000 columns") and outcome.batch_ids:
                    grown, worst, seconds, size = _read_results(base, pid, outcome.batch_ids[0])
                    read = f"reading its results as JSON Lines ({size / 2**20:.0f} MiB in {seconds:.1f} s)"
                    figures.append(Figure("hostile_batches", "embedded", f"API memory: {read}", grown, "MiB",
                                          MEMORY_GOAL_MIB, "100 MB", None if scale > 1 else 1.0))
                    figures.append(Figure("hostile_batches", "embedded", f"worst /healthz: {read}", worst, "s",
                                          HEALTHZ_GOAL, "100 ms", None if scale > 1 else 1.0))
            body_file.unlink()
    return figures


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--send":
        _send(*sys.argv[2:6], int(sys.argv[6]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="bodies of 1/16 the size: checks it runs, no goal")
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="firmsift-bench-") as folder:
        figures = run(Path(folder), 16 if args.small else 1)
    report(figures, args.out, small=args.small)


if __name__ == "__main__":
    main()
