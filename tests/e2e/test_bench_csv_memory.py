"""bench.csv_memory runs end to end at its small size and reports well-formed figures (its memory goal
means something only at full size: BENCHMARKS.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, run_group

pytestmark = pytest.mark.e2e


def test_the_csv_memory_benchmark_runs_at_small_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    run = run_group([sys.executable, "-m", "bench.csv_memory", "--small", "--out", str(out)], timeout=300, cwd=REPO)
    assert run.returncode == 0, run.stderr[-4000:]
    memory, speed = json.loads(out.read_text())["figures"]
    assert memory["unit"] == "MiB" and 0 < memory["reference"] and 0 < memory["value"]
    assert speed["unit"] == "rows/s" and speed["value"] > 0
    assert "| csv_memory |" in run.stdout
