"""Shared pytest configuration: async tests run on asyncio through anyio's plugin, hypothesis
sets no deadline, the test client's host name is served, and the long tests (the real-server
ones, and those marked `long`) start first, one on each pytest-xdist process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

REALSERVER = Path(__file__).parent / "realserver"
# The API answers only the host names it is configured for (FIRMSIFT_ALLOWED_HOSTS). Starlette's
# test client names `testserver`: allowed here, for the tests alone, beside the loopback names
# the real processes are reached on (they inherit it). Tests of the default unset it.
os.environ.setdefault("FIRMSIFT_ALLOWED_HOSTS", "localhost,127.0.0.1,::1,testserver")
# Properties are about what the code answers, not how fast: a loaded CI machine (load 15 on 2
# cores) made a 200 ms example deadline fail tests whose every answer was right. Speed is
# measured by the benchmarks.
settings.register_profile("firmsift", deadline=None)
settings.load_profile("firmsift")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long(seconds): takes about that long on a quiet machine; started first")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long tests first, spread over pytest-xdist's processes, instead of one of them being
    left until the end and running alone while the other processes sit idle.

    `--dist worksteal` (./dev test) hands process k the k-th of as many equal runs of the
    collection as there are processes, and an idle process steals from the end of another's run:
    so each run here begins with its share of the long tests, longest first (`long(seconds)`: about
    how long one takes on a quiet machine), and the short ones
    follow in file order. The real-server tests (minutes of llama.cpp on the CPU, one server for
    the module) stay together as one unit, the first."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    realserver = [item for item in items if item.path.is_relative_to(REALSERVER)]
    long_tests = sorted((item for item in items if item.get_closest_marker("long") and item not in realserver),
                        key=lambda item: -item.get_closest_marker("long").args[0])
    units = ([realserver] if realserver else []) + [[item] for item in long_tests]
    first = {id(item) for unit in units for item in unit}
    short = [item for item in items if id(item) not in first]
    runs: list[list[pytest.Item]] = [[] for _ in range(workers)]
    for index, unit in enumerate(units):
        runs[index % workers].extend(unit)
    sizes = [len(items) // workers + (k < len(items) % workers) for k in range(workers)]
    for run, size in zip(runs, sizes):
        taken = max(0, size - len(run))
        run.extend(short[:taken])
        del short[:taken]
    items[:] = [item for run in runs for item in run] + short
