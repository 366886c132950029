"""Client CPU per LLM call, alone: the LiteLLM adapter, the direct OpenAI-compatible adapter
(OpenAIChat, what FIRMSIFT_LLM_CLIENT=auto picks for these models) and a bare httpx client, each
posting the same chat completion to the fake server, `--concurrency` at a time. Run:
`.venv/bin/python -m bench.client_cpu --calls 500` (BENCHMARKS.md, throughput at C = 64)."""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.llm.litellm_llm import LiteLLM
from firmsift.adapters.llm.openai_chat import OpenAIChat
from firmsift.domain.prompt import answer_schema
from tests.support.processes import Processes

SYSTEM, USER = "system prompt " * 50, "evidence " * 300
CALLS = 640  # ten waves of 64


async def cpu_per_call(call: Callable[[int], Awaitable[None]], concurrency: int,
                       calls: int = CALLS) -> tuple[float, float]:
    """(client CPU seconds per call, wall seconds) over `calls` calls, after a warm-up wave."""
    slots = asyncio.Semaphore(concurrency)

    async def one(number: int) -> None:
        async with slots:
            await call(number)

    await asyncio.gather(*(one(n) for n in range(concurrency)))  # connections, imports, caches
    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.gather(*(one(n) for n in range(calls)))
    return (time.process_time() - cpu) / calls, time.monotonic() - wall


async def measure(base_url: str, concurrency: int, model: str, calls: int = CALLS) -> dict[str, tuple[float, float]]:
    schema = answer_schema(load_catalog()["cpg"])
    llm = LiteLLM(model, api_base=base_url, api_key="unused", timeout=60)
    direct = OpenAIChat(model, api_base=base_url, api_key="unused", timeout=60)
    client = httpx.AsyncClient(base_url=base_url, timeout=60,
                               limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency))

    async def via_litellm(number: int) -> None:
        await llm.complete(SYSTEM, f"Domain: d{number}.com\n{USER}", json_schema=schema)

    async def via_direct(number: int) -> None:
        await direct.complete(SYSTEM, f"Domain: d{number}.com\n{USER}", json_schema=schema)

    async def via_httpx(number: int) -> None:
        body = {"model": model.removeprefix("openai/"), "messages": [
            {"role": "system", "content": SYSTEM}, {"role": "user", "content": f"Domain: d{number}.com\n{USER}"}]}
        response = await client.post("/chat/completions", json=body)
        json.loads(response.content)["choices"][0]["message"]["content"]

    try:
        return {"litellm adapter": await cpu_per_call(via_litellm, concurrency, calls),
                "direct adapter": await cpu_per_call(via_direct, concurrency, calls),
                "bare httpx": await cpu_per_call(via_httpx, concurrency, calls)}
    finally:
        await client.aclose()
        await llm.aclose()
        await direct.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.client_cpu", description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per fake answer")
    parser.add_argument("--model", default="openai/gpt-5.4-mini")
    parser.add_argument("--calls", type=int, default=CALLS, help="calls measured per client, after a warm-up wave")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        processes = Processes(Path(folder))
        try:
            _, port = processes.start_fake("tests.support.fake_llm_server", "--delay", str(args.latency),
                                           "--keep-alive")
            results = asyncio.run(measure(f"http://127.0.0.1:{port}/v1", args.concurrency, args.model, args.calls))
        finally:
            processes.stop_all()
    for name, (cpu, wall) in results.items():
        print(f"{name}: {cpu * 1000:.2f} ms client CPU per call; {args.calls} calls {args.concurrency} at a time "
              f"in {wall:.2f} s (at least {args.calls / args.concurrency * args.latency:.1f} s)")


if __name__ == "__main__":
    main()
