"""bench.batch_overhead runs end to end at its small size and reports well-formed figures (its goals
mean something only at full size: BENCHMARKS.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, run_group

pytestmark = pytest.mark.e2e


def test_the_batch_overhead_benchmark_runs_at_small_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    run = run_group([sys.executable, "-m", "bench.batch_overhead", "--small", "--out", str(out)], timeout=600,
                    cwd=REPO)
    assert run.returncode == 0, run.stderr[-4000:]
    cpu, wall, *estimates = json.loads(out.read_text())["figures"]
    assert (cpu["unit"], wall["unit"]) == ("s", "s")
    assert cpu["value"] > 0 and cpu["reference"] > 0 and wall["value"] > 0 and wall["reference"] > 0
    assert [f["name"].split(" vs ")[0] for f in estimates] == ["dry-run tokens_in", "dry-run tokens_out"] * 2
    assert all(f["unit"] == "% off" and f["value"] >= 0 for f in estimates)
    # The second dry run rests on the first batch's answers: its estimate is the one with a goal.
    assert "average of 100 stored answers" in estimates[2]["note"] and estimates[2]["value"] < 10
    assert "| batch_overhead |" in run.stdout and "| batch_estimate |" in run.stdout
