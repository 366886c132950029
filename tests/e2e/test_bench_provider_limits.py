"""bench.provider_limits runs end to end at its small size and reports well-formed figures (its
goals mean something only at full size: BENCHMARKS.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, run_group

pytestmark = pytest.mark.e2e


@pytest.mark.long(60)
def test_the_provider_limits_benchmark_runs_at_small_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    run = run_group([sys.executable, "-m", "bench.provider_limits", "--small", "--out", str(out)],
                    timeout=600, cwd=REPO)
    assert run.returncode == 0, run.stderr[-4000:]
    figures = json.loads(out.read_text())["figures"]
    assert [figure["shape"] for figure in figures] == ["1 worker process, SQLite"] * 3 + ["3 worker processes, SQLite"] * 3
    for throughput, rate_limited, failed in (figures[:3], figures[3:]):
        assert throughput["unit"] == "of limit" and 0 < throughput["value"] < 2  # a full bucket lets a burst through
        assert rate_limited["unit"] == "of calls" and 0 <= rate_limited["value"] <= 1
        assert failed["unit"] == "domains" and failed["value"] == 0
    assert "| provider_limits |" in run.stdout
