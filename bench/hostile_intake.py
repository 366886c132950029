"""Hostile intake: the server CPU of the costliest bodies under FIRMSIFT_MAX_BODY_BYTES, and /healthz
latency while ten of the costliest arrive at once (issue 11, item 1).

Run on its own: `.venv/bin/python -m bench.hostile_intake [--small] [--out figures.json]`."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.figures import Figure, report
from bench.harness import Latencies, stack
from bench.proc_stats import cpu_seconds

MAX_BODY_BYTES = 65536  # FIRMSIFT_MAX_BODY_BYTES's default
CPU_LIMIT = 0.050  # seconds of server CPU per hostile body
HEALTHZ_P99_LIMIT = 0.050  # seconds
CONCURRENT_BODIES = 10
HEALTHZ_INTERVAL = 0.005  # seconds between two /healthz probes


@dataclass(frozen=True)
class HostileSize:
    repeat: int  # sends of each body, sequentially, for its CPU per request
    rounds: int  # bursts of `concurrent` worst bodies while /healthz is probed
    timeout: float  # seconds one request may take
    concurrent: int = CONCURRENT_BODIES


FULL = HostileSize(repeat=20, rounds=5, timeout=600)
SMALL = HostileSize(repeat=2, rounds=1, timeout=600)


def _fill(make: Callable[[int], object]) -> bytes:
    """The largest body {"domains": [make(0), make(1), ...]} that fits in MAX_BODY_BYTES."""
    items: list[object] = []
    size = len(_encode(items))
    while True:
        item = make(len(items))
        grown = size + len(json.dumps(item, ensure_ascii=False).encode("utf-8")) + (2 if items else 0)  # ", "
        if grown > MAX_BODY_BYTES:
            body = _encode(items)
            assert len(body) <= MAX_BODY_BYTES
            return body
        items.append(item)
        size = grown


def _encode(domains: list[object]) -> bytes:
    return json.dumps({"classifier": "cpg", "domains": domains}, ensure_ascii=False).encode("utf-8")


def _cjk(start: int, count: int) -> str:
    return "".join(chr(0x4E00 + (start + i) % 20000) for i in range(count))


def _one_huge_name() -> bytes:
    """The reported attack: one name of as many distinct CJK characters as fit, plus `.com`."""
    low, high = 1, MAX_BODY_BYTES
    while low < high:  # the longest that fits
        middle = (low + high + 1) // 2
        if len(_encode([_cjk(0, middle) + ".com"])) <= MAX_BODY_BYTES:
            low = middle
        else:
            high = middle - 1
    return _encode([_cjk(0, low) + ".com"])


def bodies() -> dict[str, bytes]:
    """Candidate worst bodies, each at most MAX_BODY_BYTES."""
    return {
        "one name of ~21,800 distinct CJK characters": _one_huge_name(),
        "names of 16 labels x 63 distinct CJK characters": _fill(
            lambda n: ".".join(_cjk(n * 1000 + k * 63, 63) for k in range(16)) + ".com"),
        "names of 4 labels x 59 distinct CJK characters": _fill(
            lambda n: ".".join(_cjk(n * 300 + k * 59, 59) for k in range(4)) + ".com"),
        "names of 1,000 decomposed accents": _fill(lambda n: f"x{n}" + "e\u0301" * 500 + ".com"),
        "distinct short internationalized names": _fill(lambda n: f"ä{n}.de"),
        "distinct ASCII names": _fill(lambda n: f"a{n}.com"),
        "distinct URLs of one name": _fill(lambda n: f"https://a.com/{n}"),
        "numbers (every one refused)": _fill(lambda n: 1),
        "superscript ports": _fill(lambda n: f"a{n}.com:²"),
    }


@dataclass(frozen=True)
class BodyCost:
    name: str
    cpu_seconds: float  # per request
    status: int
    request_bytes: int
    response_bytes: int


def _cost(client: httpx.Client, pid: int, name: str, body: bytes, repeat: int) -> BodyCost:
    before = cpu_seconds(pid)
    for _ in range(repeat):
        response = client.post("/domains/classify", content=body, headers={"Content-Type": "application/json"})
    return BodyCost(name, (cpu_seconds(pid) - before) / repeat, response.status_code, len(body),
                    len(response.content))


def _healthz_during_bursts(base: str, body_name: str, size: HostileSize) -> list[float]:
    """/healthz latencies, probed every HEALTHZ_INTERVAL while `size.concurrent` copies of the
    body are sent at once, `size.rounds` times. The bodies are sent by another process, so the
    probe does not wait for the senders' share of this process's GIL."""
    latencies: list[float] = []
    for _ in range(size.rounds):
        with httpx.Client(base_url=base, timeout=size.timeout) as probe:
            probe.get("/healthz")  # connected before the burst
            burst = subprocess.Popen([sys.executable, "-m", "bench.hostile_intake", "--burst", base, body_name,
                                      str(size.concurrent)], stdout=subprocess.PIPE, text=True)
            assert burst.stdout is not None
            burst.stdout.readline()  # "ready": bodies built, connections open
            while burst.poll() is None:
                started = time.perf_counter()
                probe.get("/healthz").raise_for_status()
                latencies.append(time.perf_counter() - started)
                time.sleep(HEALTHZ_INTERVAL)
        if burst.returncode != 0:
            raise RuntimeError(f"the burst of {body_name!r} failed ({burst.returncode})")
    return latencies


def _burst(base: str, body_name: str, concurrent: int) -> None:
    """Send `concurrent` copies of one body at once (run in its own process by the benchmark)."""
    body = bodies()[body_name]
    clients = [httpx.Client(base_url=base, timeout=1800) for _ in range(concurrent)]
    for client in clients:
        client.get("/healthz")
    barrier = threading.Barrier(concurrent)

    def post(client: httpx.Client) -> None:
        barrier.wait()
        client.post("/domains/classify", content=body, headers={"Content-Type": "application/json"})

    senders = [threading.Thread(target=post, args=(client,)) for client in clients]
    print("ready", flush=True)
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()


def _healthz_idle(base: str, count: int) -> list[float]:
    """/healthz latencies with nothing else to do, probed as during the bursts: the machine's own noise."""
    latencies = []
    with httpx.Client(base_url=base, timeout=30) as probe:
        probe.get("/healthz")
        for _ in range(count):
            started = time.perf_counter()
            probe.get("/healthz").raise_for_status()
            latencies.append(time.perf_counter() - started)
            time.sleep(HEALTHZ_INTERVAL)
    return latencies


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run(folder: Path, latencies: Latencies, size: HostileSize) -> list[Figure]:
    candidates = bodies()
    with stack("embedded", folder / "hostile-embedded", latencies) as services:
        api, base = services.api(settings={"FIRMSIFT_MAX_BODY_BYTES": str(MAX_BODY_BYTES)})
        with httpx.Client(base_url=base, timeout=size.timeout) as client:
            client.get("/healthz")
            costs = [_cost(client, api.popen.pid, name, body, size.repeat) for name, body in candidates.items()]
        worst = max(costs, key=lambda cost: cost.cpu_seconds)
        probes = _healthz_during_bursts(base, worst.name, size)
        idle = _healthz_idle(base, max(len(probes), 100))
    figures = [
        Figure("hostile", "embedded", f"server CPU per request: {cost.name}", cost.cpu_seconds, "s", CPU_LIMIT,
               "50 ms", 1.0, note=f"{cost.status}, {cost.request_bytes} B in, {cost.response_bytes} B out")
        for cost in costs
    ]
    figures.append(Figure(
        "hostile", "embedded", f"/healthz p99 while {size.concurrent} of the worst bodies arrive at once",
        _percentile(probes, 0.99), "s", HEALTHZ_P99_LIMIT, "50 ms", 1.0,
        note=f"{worst.name}; {len(probes)} probes over {size.rounds} burst(s), worst {1000 * max(probes):.1f} ms"))
    figures.append(Figure(
        "hostile", "embedded", "/healthz p99 with nothing else to do (the machine's noise)", _percentile(idle, 0.99),
        "s", HEALTHZ_P99_LIMIT, "50 ms", note=f"{len(idle)} probes, worst {1000 * max(idle):.1f} ms"))
    figures.append(Figure(
        "hostile", "embedded", "largest error answer / its request", max(c.response_bytes / c.request_bytes
                                                                         for c in costs), "x"))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile_intake", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="fewer repetitions: checks that it runs")
    parser.add_argument("--burst", nargs=3, metavar=("BASE", "BODY", "COUNT"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="write the figures and the machine as JSON here")
    parser.add_argument("--repeat", type=int, help="sends of each body for its CPU (default 20; --small 2)")
    parser.add_argument("--rounds", type=int, help="bursts while /healthz is probed (default 5; --small 1)")
    parser.add_argument("--concurrent", type=int, default=CONCURRENT_BODIES,
                        help=f"worst bodies sent at once in a burst (default {CONCURRENT_BODIES})")
    args = parser.parse_args(argv)
    if args.burst:
        _burst(args.burst[0], args.burst[1], int(args.burst[2]))
        return 0
    preset = SMALL if args.small else FULL
    size = HostileSize(repeat=args.repeat or preset.repeat, rounds=args.rounds or preset.rounds,
                       timeout=preset.timeout, concurrent=args.concurrent)
    with tempfile.TemporaryDirectory(prefix="firmsift-bench-") as folder:
        figures = run(Path(folder), Latencies(), size)
    report(figures, args.out, small=args.small)
    return 0


if __name__ == "__main__":
    sys.exit(main())
