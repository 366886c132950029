"""Shared pytest configuration: async tests run on asyncio through anyio's plugin, and the
real-server tests are collected first."""

from pathlib import Path

import pytest

REALSERVER = Path(__file__).parent / "realserver"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real-server tests (minutes of llama.cpp on the CPU) first, the rest in their order: on
    pytest-xdist's processes (./dev test) they then start at once on one process instead of
    being left until the end and running alone while the other processes sit idle."""
    items.sort(key=lambda item: not item.path.is_relative_to(REALSERVER))
