"""bench.batch_intake runs end to end at its small size and reports well-formed figures (its goals
mean something only at full size: BENCHMARKS.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, run_group

pytestmark = pytest.mark.e2e


def test_the_batch_intake_benchmark_runs_at_small_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    run = run_group([sys.executable, "-m", "bench.batch_intake", "--small", "--out", str(out)], timeout=300, cwd=REPO)
    assert run.returncode == 0, run.stderr[-4000:]
    accept, memory, *results = json.loads(out.read_text())["figures"]
    assert accept["unit"] == "s" and accept["value"] > 0
    assert memory["unit"] == "MiB" and memory["value"] > 0
    # Pending rows, then answered rows as JSON Lines and as CSV.
    assert [("PENDING" in r["name"], r["name"].split()[-1]) for r in results] == [
        (True, "PENDING)"), (False, "Lines"), (False, "CSV")]
    assert all(r["unit"] == "rows/s" and r["value"] > 0 for r in results)
    assert "| batch_intake |" in run.stdout
