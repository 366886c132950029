"""Development tools installed by `npm ci` (the SQS emulator, playwright-core): find them or skip loudly."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.support.processes import REPO


def require_node_package(package: str, what: str, *also_missing: str) -> str:
    """Path of `node` when node_modules/<package> is installed, else skip with what to install;
    under CI=true, fail instead (CI must run every test). `also_missing` adds other absent tools."""
    node = shutil.which("node")
    missing = list(also_missing)
    if not (REPO / "node_modules" / package / "package.json").is_file():
        missing.append(f"node_modules/{package} is missing: run `npm ci`")
    if node is None:
        missing.append("`node` is not on PATH: install Node.js 20 or newer")
    if missing:
        reason = f"{what} unavailable: " + "; ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    assert node is not None
    return node
