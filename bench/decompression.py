"""Peak memory per fetch when a server answers a compression bomb: the homepage reader and a
search-API client against a loopback server sending 200 MB of zeros as ~200 KB of gzip or deflate,
whatever Accept-Encoding asked for. Run: `.venv/bin/python -m bench.decompression` (BENCHMARKS.md).

Each case runs in a fresh process: one unmeasured fetch of a small page warms imports and
clients up, then the measured fetch. Peak memory is tracemalloc's peak of Python allocations
during the fetch, and the growth of resident memory (VmHWM after the fetch, reset before it
through /proc/self/clear_refs, minus VmRSS before it)."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from firmsift.adapters.homepage_search import HomepageSearch
from firmsift.adapters.searxng_search import SearxngSearch
from firmsift.domain.errors import ProviderError
from tests.support.compression_bombs import bomb
from tests.support.fake_search_server import FakeSearchServer, Reply

INFLATED = 200_000_000
CASES = [("homepage", "gzip"), ("homepage", "deflate"), ("homepage", "identity"),
         ("searxng", "gzip"), ("searxng", "deflate")]
MIB = 1 << 20


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def _reply(encoding: str, kind: str) -> Reply:
    """The bomb, or for identity an honest page of max_bytes and a half (it is cut)."""
    if encoding == "identity":
        return Reply(body=b"<title>big</title>" + b"<p>words</p>" * 64_000)
    prefix = b"<title>bomb</title>" if kind == "homepage" else b'{"results": ['
    content_type = "text/html" if kind == "homepage" else "application/json"
    return Reply(body=bomb(encoding, INFLATED, prefix=prefix), content_type=content_type,
                 headers={"Content-Encoding": encoding})


async def _fetch(kind: str, encoding: str) -> dict[str, object]:
    async def loopback(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    with FakeSearchServer() as server:
        server.add_html("warm.example", "/", "<title>warm</title><p>up</p>")
        adapter: HomepageSearch | SearxngSearch
        if kind == "homepage":
            server.add_page("example.com", "/", _reply(encoding, kind))
            adapter = HomepageSearch(allow_private_addresses=True, resolver=loopback, port=server.port,
                                     total_timeout=120, timeout=60)
            await adapter.gather("warm.example")
        else:
            adapter = SearxngSearch(server.base_url, timeout=120)
            await adapter.gather("warm.example")
            server.override = _reply(encoding, kind)
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        rss_before = _status_kib("VmRSS")
        tracemalloc.start()
        started = time.monotonic()
        try:
            evidence = await adapter.gather("example.com")
            outcome = f"{len(evidence)} evidence item(s)"
        except ProviderError as error:
            outcome = str(error)
        seconds = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        grown = _status_kib("VmHWM") - rss_before
        await adapter.aclose()
    return {"kind": kind, "encoding": encoding, "traced_peak_mib": round(peak / MIB, 1),
            "rss_growth_mib": round(grown / 1024, 1), "seconds": round(seconds, 2), "outcome": outcome}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", help=argparse.SUPPRESS)  # kind:encoding, run in this process
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(asyncio.run(_fetch(*args.case.split(":")))))
        return
    print("| client | Content-Encoding | traced peak | resident growth | time | outcome |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind, encoding in CASES:
        child = subprocess.run([sys.executable, "-m", "bench.decompression", "--case", f"{kind}:{encoding}"],
                               capture_output=True, text=True, check=True)
        row = json.loads(child.stdout.splitlines()[-1])
        print(f"| {kind} | {encoding} | {row['traced_peak_mib']} MiB | {row['rss_growth_mib']} MiB | "
              f"{row['seconds']} s | {row['outcome'][:90]} |", flush=True)


if __name__ == "__main__":
    main()
