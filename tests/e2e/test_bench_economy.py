"""bench.economy runs end to end at its small size (40 domains, a kill -9 mid provider batch) and
reports the figures BENCHMARKS.md quotes at full size."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, run_group

pytestmark = pytest.mark.e2e


def test_the_economy_benchmark_runs_at_small_size(tmp_path: Path) -> None:
    out = tmp_path / "economy.json"
    run = run_group([sys.executable, "-m", "bench.economy", "--small", "--out", str(out)], timeout=400, cwd=REPO)
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["goal_met"] and report["cost_per_domain_ratio"] == 0.5
    economy = report["economy"]
    assert (economy["done"], economy["lost"], economy["provider_batches_after_restart"]) == (40, 0, 0)
    assert economy["questions_sent"] == 40 and economy["questions_sent_twice"] == 0
