"""Peak memory per fetch when a server answers a compression bomb: the homepage reader, a
search-API client and the LLM adapter (litellm) against a loopback server sending 200 MB as
~200 KB of gzip or deflate, whatever Accept-Encoding asked for. Run:
`.venv/bin/python -m bench.decompression` (BENCHMARKS.md).

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
from collections.abc import Awaitable, Callable
from pathlib import Path

from firmsift.adapters.search.homepage import HomepageSearch
from firmsift.adapters.llm.litellm_llm import LiteLLM
from firmsift.adapters.search.searxng import SearxngSearch
from firmsift.domain.errors import ProviderError
from tests.support.compression_bombs import bomb
from tests.support.fake_search_server import FakeSearchServer, Reply

INFLATED = 200_000_000
CASES = [("homepage", "gzip"), ("homepage", "deflate"), ("homepage", "identity"),
         ("searxng", "gzip"), ("searxng", "deflate"), ("litellm", "gzip")]
# A chat completion whose answer is 200 MB of "a": valid JSON, so the client parses all of it.
_COMPLETION = (b'{"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [{"index": 0, '
               b'"finish_reason": "stop", "message": {"role": "assistant", "content": "',
               b'"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}')
MIB = 1 << 20


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def _reply(encoding: str, kind: str) -> Reply:
    """The bomb, or for identity an honest page of max_bytes and a half (it is cut)."""
    if kind == "litellm":
        prefix, suffix = _COMPLETION
        return Reply(body=bomb(encoding, INFLATED, prefix=prefix, suffix=suffix, fill=b"a"),
                     content_type="application/json", headers={"Content-Encoding": encoding})
    if encoding == "identity":
        return Reply(body=b"<title>big</title>" + b"<p>words</p>" * 64_000)
    prefix = b"<title>bomb</title>" if kind == "homepage" else b'{"results": ['
    content_type = "text/html" if kind == "homepage" else "application/json"
    return Reply(body=bomb(encoding, INFLATED, prefix=prefix), content_type=content_type,
                 headers={"Content-Encoding": encoding})


async def _measured(kind: str, encoding: str, fetch: Callable[[], Awaitable[str]]) -> dict[str, object]:
    """Runs `fetch` once, measuring its memory; its outcome is what it returned or the error."""
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    rss_before = _status_kib("VmRSS")
    tracemalloc.start()
    started = time.monotonic()
    try:
        outcome = await fetch()
    except ProviderError as error:
        outcome = str(error)
    seconds = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    grown = _status_kib("VmHWM") - rss_before
    return {"kind": kind, "encoding": encoding, "traced_peak_mib": round(peak / MIB, 1),
            "rss_growth_mib": round(grown / 1024, 1), "seconds": round(seconds, 2), "outcome": outcome}


async def _fetch(kind: str, encoding: str) -> dict[str, object]:
    async def loopback(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    with FakeSearchServer() as server:
        if kind == "litellm":
            llm = LiteLLM("openai/m", api_base=f"{server.base_url}/v1", api_key="unused", timeout=120)

            async def answer() -> str:
                completion = await llm.complete("system", "user", json_schema={"type": "object"})
                return f"an answer of {len(completion.text):,} characters"

            server.add_page("127.0.0.1", "/v1/chat/completions",
                            Reply(body=_COMPLETION[0] + b"warm" + _COMPLETION[1], content_type="application/json"))
            try:
                await answer()
                server.add_page("127.0.0.1", "/v1/chat/completions", _reply(encoding, kind))
                return await _measured(kind, encoding, answer)
            finally:
                await llm.aclose()
        server.add_html("warm.example", "/", "<title>warm</title><p>up</p>")
        search: HomepageSearch | SearxngSearch
        if kind == "homepage":
            server.add_page("example.com", "/", _reply(encoding, kind))
            search = HomepageSearch(allow_private_addresses=True, resolver=loopback, port=server.port,
                                    total_timeout=120, timeout=60)
        else:
            search = SearxngSearch(server.base_url, timeout=120)
        await search.gather("warm.example")
        if kind != "homepage":
            server.override = _reply(encoding, kind)

        async def evidence() -> str:
            return f"{len(await search.gather('example.com'))} evidence item(s)"

        try:
            return await _measured(kind, encoding, evidence)
        finally:
            await search.aclose()


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
