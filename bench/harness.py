"""What every benchmark stands on: the fake providers with fixed latencies, a fresh backend of
either shape, and the real `firmsift` processes started against them."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.postgres import postgres_engine
from tests.support.processes import (Process, Processes, announced_port, run_cli, start_api, start_worker,
                                     wait_healthy, wait_until)
from tests.support.sqs_emulator import sqs_emulator, write_queues_file

SHAPES = ("embedded", "production")
MAX_RECEIVES = 5
GROUP_PORT = re.compile(r"serving https?://\S+?:(\d+) from \d+ processes")  # `firmsift api --workers N`
COPY_STARTED = "Application startup complete"  # each API copy, once it serves
PROBE_LISTENING = re.compile(r'"message": "worker probe listening".*?"port": (\d+)')

# Every process of a benchmark: the fake providers, no keys or rate limit on loopback, a quick
# clean stop at the end (nothing is measured then).
COMMON_SETTINGS = {
    "FIRMSIFT_AUTH": "off",
    "FIRMSIFT_RATE_LIMIT_PER_MINUTE": "0",
    "FIRMSIFT_LLM_MODEL": "openai/fake-model",
    "FIRMSIFT_SEARCH_PROVIDER": "searxng",
    "FIRMSIFT_SHUTDOWN_GRACE_SECONDS": "2",
    # The benchmarks' domains are made up (and the sandbox's DNS answers NXDOMAIN for all):
    # bench/precheck.py measures the pre-check, on its own DNS server and local sites.
    "FIRMSIFT_PRECHECK": "false",
}


@dataclass(frozen=True)
class Latencies:
    """Fixed answer times of the fake providers, seconds."""

    llm: float = 1.0
    search: float = 0.2

    @property
    def one_domain(self) -> float:
        """The least time one uncached domain can take: its search, then its LLM call."""
        return self.llm + self.search


@dataclass
class Stack:
    """Fake providers and a fresh backend; firmsift processes are started on demand."""

    shape: str
    processes: Processes
    llm_log: Path

    def serve(self, name: str, settings: dict[str, str] | None = None) -> tuple[Process, str]:
        """`firmsift serve` (API + worker in one process) once healthy: (process, base URL)."""
        return self._http_process(name, "serve", settings)

    def api(self, name: str = "api", settings: dict[str, str] | None = None) -> tuple[Process, str]:
        """`firmsift api` once healthy: (process, base URL)."""
        return self._http_process(name, "api", settings)

    def worker(self, name: str = "worker", settings: dict[str, str] | None = None) -> tuple[Process, str]:
        """`firmsift worker` once its probe answers, litellm loaded: (process, probe base URL)."""
        process, probe = start_worker(self.processes, name, settings)
        wait_healthy(probe, process)
        return process, probe

    def api_group(self, count: int, name: str = "api-group") -> tuple[Process, str]:
        """`firmsift api --workers count` once every copy serves: (the parent, base URL)."""
        process = self.processes.firmsift(name, "api", "--workers", str(count), "--port", "0")
        base = f"http://127.0.0.1:{announced_port(process, GROUP_PORT)}"
        wait_until(lambda: process.log().count(COPY_STARTED) >= count, 60, f"{name}: not every copy started")
        wait_healthy(base, process)
        return process, base

    def worker_group(self, count: int, name: str, settings: dict[str, str]) -> tuple[Process, list[str]]:
        """`firmsift worker --processes count` once every copy's probe answers: (the parent, the
        copies' probe base URLs). Each copy imports litellm: on a loaded machine, well over a minute."""
        process = self.processes.firmsift(name, "worker", "--processes", str(count),
                                          extra_env={**settings, "FIRMSIFT_WORKER_PROBE_PORT": "0"})

        def ports() -> list[int] | None:
            found = [int(port) for port in PROBE_LISTENING.findall(process.log())]
            return found if len(found) >= count else None

        probes = [f"http://127.0.0.1:{port}" for port in wait_until(ports, 180, f"{name}: not every probe listened")]
        for probe in probes:
            wait_healthy(probe, process)
        return process, probes

    def _http_process(self, name: str, command: str, settings: dict[str, str] | None) -> tuple[Process, str]:
        return start_api(self.processes, name, command=command, extra_env=settings)

    def llm_calls(self) -> Counter[str]:
        """LLM requests answered so far, by the domain they asked about."""
        if not self.llm_log.exists():
            return Counter()
        lines = (json.loads(line) for line in self.llm_log.read_text().splitlines() if line.strip())
        return Counter(line["domain"] for line in lines if line["status"] == 200)


@contextmanager
def stack(shape: str, folder: Path, latencies: Latencies, *, visibility_timeout: int = 30,
          llm_options: tuple[str, ...] = ()) -> Iterator[Stack]:
    """Fake LLM and search servers with `latencies` and a fresh backend of `shape`: "embedded"
    (a SQLite file, queue in the database) or "production" (a new PostgreSQL database and a fauxqs
    SQS emulator with the declared queues). `llm_options` go to the fake LLM server's command
    line. Every process is stopped at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    with _backend(shape, folder, visibility_timeout) as backend_settings:
        processes = Processes(folder)
        try:
            llm_log = folder / "llm-calls.jsonl"
            # Keep-alive, as real providers do: a new TCP connection per call would be measured too
            # (the search server closing each one cost the worker ~3 ms of CPU a domain).
            _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--delay", str(latencies.llm),
                                                  "--keep-alive", "--log", str(llm_log), *llm_options)
            _search, search_port = processes.start_fake("tests.support.fake_search_server",
                                                        "--delay", str(latencies.search), "--keep-alive")
            processes.env = {
                **COMMON_SETTINGS, **backend_settings,
                "FIRMSIFT_VISIBILITY_TIMEOUT": str(visibility_timeout),
                "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
                "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
            }
            if shape == "production":
                ensure = run_cli(processes.env, "queues", "ensure")
                if ensure.returncode != 0:
                    raise RuntimeError(f"firmsift queues ensure failed:\n{ensure.stderr}")
            yield Stack(shape, processes, llm_log)
        finally:
            processes.stop_all()


@contextmanager
def _backend(shape: str, folder: Path, visibility_timeout: int) -> Iterator[dict[str, str]]:
    if shape == "embedded":
        yield {"FIRMSIFT_DATABASE_URL": f"sqlite:///{folder / 'firmsift.db'}"}
        return
    if shape != "production":
        raise ValueError(f"unknown shape {shape!r}: use one of {SHAPES}")
    with postgres_engine() as engine, sqs_emulator() as endpoint:
        queues = write_queues_file(folder / "queues.toml", max_receives=MAX_RECEIVES,
                                   visibility_timeout=visibility_timeout)
        yield {
            "FIRMSIFT_DATABASE_URL": engine.url.render_as_string(hide_password=False),
            "FIRMSIFT_QUEUE_BACKEND": "sqs",
            "FIRMSIFT_QUEUE_NAME": "firmsift-jobs.fifo",
            "FIRMSIFT_QUEUES_FILE": str(queues),
            "FIRMSIFT_MAX_RECEIVES": str(MAX_RECEIVES),
            "FIRMSIFT_SQS_ENDPOINT_URL": endpoint,
            "FIRMSIFT_AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
        }


def domains(prefix: str, count: int) -> list[str]:
    """`count` distinct domains no earlier job of the run asked about."""
    return [f"{prefix}-{i}.com" for i in range(count)]


def submit(client: httpx.Client, job_domains: list[str]) -> str:
    """POST one job and return its id."""
    response = client.post("/domains/classify", json={"classifier": "cpg", "domains": job_domains})
    response.raise_for_status()
    return str(response.json()["job_id"])


def wait_finished(client: httpx.Client, job_id: str, *, interval: float, timeout: float = 300) -> dict:
    """Poll a job every `interval` seconds until it is DONE or FAILED; its document."""

    def finished() -> dict | None:
        document = client.get(f"/domains/classify/{job_id}").json()
        return document if document["status"] in ("DONE", "FAILED") else None

    return wait_until(finished, timeout, f"job {job_id} did not finish", interval=interval)


def jobs_finished(*probes: str) -> int:
    """Jobs the workers behind these probes have finished, from their /metrics."""
    texts = [httpx.get(f"{probe}/metrics", timeout=5).text for probe in probes]
    return int(sum(float(line.rsplit(" ", 1)[1]) for text in texts for line in text.splitlines()
                   if line.startswith("firmsift_jobs_finished_total{")))
