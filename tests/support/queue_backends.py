"""The queue adapters the WorkQueue behaviour suite runs against, and how time passes for each:
a fake clock for the queues firmsift runs itself, real (short) waits for SQS."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
from sqlalchemy import Engine

from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.adapters.sql.engine import make_engine
from firmsift.adapters.sql.migrations import upgrade
from firmsift.adapters.sql.queue import SqlQueue
from firmsift.adapters.sqs.queue import SqsQueue
from tests.support.postgres import postgres_engine
from tests.support.sqs_emulator import sqs_client

F = TypeVar("F", bound=Callable[..., Any])


class Clock(Protocol):
    def __call__(self) -> float: ...

    async def advance(self, seconds: float) -> None: ...


class FakeClock:
    """A clock that moves only when told, so visibility and dedup windows pass instantly."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    async def advance(self, seconds: float) -> None:
        self.now += seconds


class RealClock:
    """Wall-clock time, for a queue whose clock nobody controls (SQS): advancing really waits."""

    def __call__(self) -> float:
        return time.time()

    async def advance(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(frozen=True)
class QueueSettings:
    name: str = "work.fifo"
    visibility_timeout: float = 30.0
    max_receives: int = 3
    dedup_window: float = 300.0
    poll_interval: float = 1.0  # long enough that a prompt wake-up cannot come from polling
    clock: Callable[[], float] = time.time


@dataclass
class OpenedQueue:
    queue: Any  # a WorkQueue that also offers approximate_counts()
    dead_letters: Any  # a WorkQueue reading the dead-letter queue
    other_handle: Any  # a second handle on the same queue, as another task or module would hold


@dataclass
class Backend:
    """How to open a queue, and how time passes for it. Tests wait in units of the backend's
    visibility timeout: `margin` either side of it is "just before" and "just after"."""

    open: Callable[[QueueSettings], OpenedQueue]
    clock: Clock = field(default_factory=FakeClock)
    visibility_timeout: float = 30.0
    margin: float = 1.0
    shortest_real_timeout: float = 0.3  # for the one test that lets real time expire a lease
    dead_letters_restart_receive_count: bool = True  # see the dead-letter test


def _sql_backend(engine: Engine) -> Backend:
    def open_queue(settings: QueueSettings) -> OpenedQueue:
        def handle(name: str, max_receives: int | None) -> SqlQueue:
            return SqlQueue(
                engine, name, visibility_timeout=settings.visibility_timeout,
                max_receives=max_receives, poll_interval=settings.poll_interval,
                dedup_window=settings.dedup_window, clock=settings.clock,
            )

        queue = handle(settings.name, settings.max_receives)
        dead_letters = handle(queue.dead_letter_queue, None)
        return OpenedQueue(queue, dead_letters, handle(settings.name, settings.max_receives))

    return Backend(open_queue)


@contextmanager
def memory_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    def open_queue(settings: QueueSettings) -> OpenedQueue:
        queue = InMemoryQueue(
            settings.name, visibility_timeout=settings.visibility_timeout, max_receives=settings.max_receives,
            dedup_window=settings.dedup_window, clock=settings.clock,
        )
        return OpenedQueue(queue, queue.dead_letters, queue)

    yield Backend(open_queue)


@contextmanager
def sqlite_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    engine = make_engine(f"sqlite:///{tmp_path / 'queue.db'}")
    upgrade(engine)
    try:
        yield _sql_backend(engine)
    finally:
        engine.dispose()


@contextmanager
def postgresql_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with postgres_engine() as engine:
        yield _sql_backend(engine)


@contextmanager
def sqs_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    # The emulator is the suite's module-scoped `sqs_endpoint` fixture: started once, and only
    # when an SQS test runs.
    client = sqs_client(request.getfixturevalue("sqs_endpoint"))

    def open_queue(settings: QueueSettings) -> OpenedQueue:
        # Fresh queues per test on the shared emulator; the redrive policy does the dead-lettering.
        suffix = uuid.uuid4().hex[:12]
        dead_url = client.create_queue(QueueName=f"dlq-{suffix}.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        dead_arn = client.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        redrive = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": settings.max_receives})
        url = client.create_queue(
            QueueName=f"work-{suffix}.fifo", Attributes={"FifoQueue": "true", "RedrivePolicy": redrive}
        )["QueueUrl"]

        def handle(queue_url: str) -> SqsQueue:
            return SqsQueue(client, queue_url, visibility_timeout=settings.visibility_timeout)

        return OpenedQueue(handle(url), handle(dead_url), handle(url))

    try:
        # SQS counts whole seconds on its own clock: the shortest lease is 1 s and waits are real.
        yield Backend(
            open_queue, clock=RealClock(), visibility_timeout=1.0, margin=0.4, shortest_real_timeout=1.0,
            # SQS moves the message itself to the dead-letter queue, receive count and all.
            dead_letters_restart_receive_count=False,
        )
    finally:
        client.close()


# Add an adapter here and every test in tests/integration/test_queue_behaviour.py runs against it.
BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], Any]] = {
    "memory": memory_backend,
    "sqlite": sqlite_backend,
    "postgresql": postgresql_backend,
    "sqs": sqs_backend,
}


def not_on(backend: str, why: str) -> Callable[[F], F]:
    """Skip a test on one backend, saying why that backend cannot show the behaviour."""

    def mark(test: F) -> F:
        test.not_on = {**getattr(test, "not_on", {}), backend: why}  # type: ignore[attr-defined]
        return test

    return mark
