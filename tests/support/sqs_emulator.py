"""The SQS emulator (fauxqs, pinned in package.json) on a loopback port, and boto3 clients for it."""

from __future__ import annotations

from pathlib import Path

import select
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config

from tests.support.node_tools import require_node_package
from tests.support.processes import REPO

REGION = "us-east-1"
ACCOUNT = "000000000000"  # fauxqs answers for this one account; its queue URLs and ARNs name it

# fauxqs's own command (`npx fauxqs`) listens on 0.0.0.0; the package's buildApp lets us keep
# the emulator on loopback and take a port the kernel picks, so parallel runs never collide.
_LAUNCH = """
import { buildApp } from "fauxqs";
const app = buildApp({ logger: false });
const address = await app.listen({ host: "127.0.0.1", port: 0 });
console.log(address);
"""
_START_TIMEOUT = 30.0


@contextmanager
def sqs_emulator() -> Iterator[str]:
    """Start fauxqs on a free loopback port, yield its endpoint URL once it answers, stop it at the end."""
    node = require_node_package("fauxqs", "SQS emulator")
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [node, "--input-type=module", "-e", _LAUNCH],
            cwd=REPO, stdout=subprocess.PIPE, stderr=log,
        )
        try:
            endpoint = _read_address(process, log)
            _wait_until_healthy(endpoint, process, log)
            yield endpoint
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
            assert process.stdout is not None
            process.stdout.close()


def _read_address(process: subprocess.Popen[bytes], log: Any) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], _START_TIMEOUT)
    line = process.stdout.readline().decode().strip() if ready else ""
    if not line.startswith("http://127.0.0.1:"):
        raise RuntimeError(f"fauxqs did not start (printed {line!r}):\n{_log_text(log)}")
    return line


def _wait_until_healthy(endpoint: str, process: subprocess.Popen[bytes], log: Any) -> None:
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"fauxqs exited early:\n{_log_text(log)}")
        try:
            with urllib.request.urlopen(f"{endpoint}/health", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.05)
    raise TimeoutError(f"fauxqs never answered on {endpoint}:\n{_log_text(log)}")


def _log_text(log: Any) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")


def sqs_client(endpoint: str, *, connect_timeout: float = 2, max_attempts: int = 1) -> Any:
    """A boto3 SQS client for the emulator: dummy credentials, us-east-1, no retries by default
    (a test should see the first failure), a read timeout longer than SQS's 20 s long poll."""
    config = Config(
        connect_timeout=connect_timeout, read_timeout=30,
        retries={"mode": "standard", "max_attempts": max_attempts},
    )
    # A session of its own: boto3's default session is shared module state and not thread-safe.
    return boto3.session.Session().client(
        "sqs", endpoint_url=endpoint, region_name=REGION,
        aws_access_key_id="test", aws_secret_access_key="test", config=config,
    )


def offline_sqs_client() -> Any:
    """A client for botocore's Stubber, which answers in place of SQS: nothing reaches a network.
    For what the emulator cannot show (AWS's refusals, SQS's move task)."""
    return boto3.session.Session().client(
        "sqs", region_name=REGION, aws_access_key_id="test", aws_secret_access_key="test"
    )


def fresh_queue(client: Any, stem: str, attributes: dict[str, str] | None = None) -> tuple[str, str]:
    """Create a uniquely named queue on a shared emulator and return (name, url); a stem ending
    .fifo makes a FIFO queue."""
    fifo = stem.endswith(".fifo")
    name = f"{stem.removesuffix('.fifo')}-{uuid.uuid4().hex[:10]}{'.fifo' if fifo else ''}"
    wanted = {"FifoQueue": "true", **(attributes or {})} if fifo else dict(attributes or {})
    return name, client.create_queue(QueueName=name, Attributes=wanted)["QueueUrl"]


def emulator_queue_url(endpoint: str, name: str) -> str:
    """The URL fauxqs gives a queue (AWS's sqs.<region>.<host> form, on its own port and account)."""
    port = endpoint.rsplit(":", 1)[1]
    return f"http://sqs.{REGION}.localhost:{port}/{ACCOUNT}/{name}"


def write_queues_file(path: Path, *, max_receives: int, visibility_timeout: int) -> Path:
    """deploy/queues.toml with test timings: short visibility and long poll, and `max_receives`."""
    path.write_text(f"""
[work_queue]
name = "firmsift-jobs.fifo"
max_receive_count = {max_receives}
[work_queue.attributes]
FifoQueue = true
ContentBasedDeduplication = false
VisibilityTimeout = {visibility_timeout}
MessageRetentionPeriod = 3600
ReceiveMessageWaitTimeSeconds = 1
[dead_letter_queue]
name = "firmsift-jobs-dlq.fifo"
[dead_letter_queue.attributes]
FifoQueue = true
ContentBasedDeduplication = false
VisibilityTimeout = {visibility_timeout}
MessageRetentionPeriod = 3600
""")
    return path
