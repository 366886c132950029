"""A small HTTP/1.1 load generator on raw asyncio streams (keep-alive connections, prebuilt
requests), light enough that one core of it outruns the servers it measures on loopback."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.harness import domains

MAX_CONNECTIONS = 64  # the open-loop pool: requests beyond it wait, and the wait counts as latency


@dataclass(frozen=True)
class LoadResult:
    requests: int
    failures: int  # responses other than 202, and broken connections
    seconds: float
    latencies: list[float]  # seconds, of the successful requests

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def classify_request(port: int, number: int, domains_per_request: int) -> bytes:
    """POST /domains/classify of `domains_per_request` domains no other request names."""
    body = json.dumps({"classifier": "cpg", "domains": domains(f"load{number}", domains_per_request)}).encode()
    head = (f"POST /domains/classify HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


class Connection:
    """One keep-alive connection sending a request and reading its response at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def exchange(self, request: bytes) -> int:
        """Send the request; the response's status once its body has been read."""
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next((int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0)
        await self.reader.readexactly(length)
        return int(lines[0].split(" ", 2)[1])

    def close(self) -> None:
        self.writer.close()


Requests = Callable[[int], bytes]


async def closed_loop(port: int, make_request: Requests, *, connections: int, seconds: float,
                      expected_status: int = 202) -> LoadResult:
    """`connections` clients each sending the next request as soon as the last one is answered,
    for `seconds`: the most the server can take."""
    counter = iter(range(10**9))
    latencies: list[float] = []
    failures = 0
    deadline = time.monotonic() + seconds

    async def client() -> None:
        nonlocal failures
        connection = await Connection.open(port)
        try:
            while time.monotonic() < deadline:
                sent = time.monotonic()
                if await connection.exchange(make_request(next(counter))) == expected_status:
                    latencies.append(time.monotonic() - sent)
                else:
                    failures += 1
        finally:
            connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client() for _ in range(connections)))
    return LoadResult(len(latencies) + failures, failures, time.monotonic() - started, latencies)


async def open_loop(port: int, make_request: Requests, *, rate: float, seconds: float,
                    expected_status: int = 202) -> LoadResult:
    """Requests sent on a fixed schedule of `rate` a second for `seconds`, whatever the answers
    (no coordinated omission: each latency runs from the request's scheduled time)."""
    pool: asyncio.Queue[Connection] = asyncio.Queue()
    for connection in await asyncio.gather(*(Connection.open(port) for _ in range(MAX_CONNECTIONS))):
        pool.put_nowait(connection)
    latencies: list[float] = []
    failures = 0

    async def send(number: int, scheduled: float) -> None:
        nonlocal failures
        connection = await pool.get()
        try:
            status = await connection.exchange(make_request(number))
        except (OSError, asyncio.IncompleteReadError):
            failures += 1
            connection = await Connection.open(port)
        else:
            if status == expected_status:
                latencies.append(time.monotonic() - scheduled)
            else:
                failures += 1
        pool.put_nowait(connection)

    total = int(rate * seconds)
    started = time.monotonic()
    tasks = []
    for number in range(total):
        scheduled = started + number / rate
        await asyncio.sleep(max(0.0, scheduled - time.monotonic()))
        tasks.append(asyncio.create_task(send(number, scheduled)))
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - started
    while not pool.empty():
        pool.get_nowait().close()
    return LoadResult(total, failures, elapsed, latencies)
