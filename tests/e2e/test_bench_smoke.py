"""The benchmark suite (bench/) runs end to end at its smallest size and reports well-formed
figures. Timings are not checked here: they mean something only at full size (BENCHMARKS.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, run_group

pytestmark = pytest.mark.e2e
BENCHMARKS = {"latency", "throughput", "accept", "cost", "idle"}


def test_the_smoke_runs_cover_every_benchmark_bench_run_knows() -> None:
    from bench.run import BENCHMARKS as KNOWN

    assert set(KNOWN) == BENCHMARKS


@pytest.mark.long(60)
@pytest.mark.parametrize("benchmark", sorted(BENCHMARKS))
def test_each_benchmark_runs_at_small_size_and_reports_its_figures(benchmark: str, tmp_path: Path) -> None:
    # One run per benchmark, so each has its own time budget on a loaded machine (together, as
    # `bench.run all`, they once ran over 240 s in CI) and a failure names the benchmark.
    out = tmp_path / "figures.json"
    # The embedded shape keeps the run short; cost runs on PostgreSQL + SQS whatever the shape.
    run = run_group([sys.executable, "-m", "bench.run", benchmark, "--small", "--shape", "embedded", "--out", str(out)],
                    timeout=240, cwd=REPO)
    assert run.returncode == 0, run.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["small"] is True and report["machine"]["cores"] >= 1
    figures = report["figures"]
    assert figures and {f["benchmark"] for f in figures} == {benchmark}
    for figure in figures:
        assert figure["value"] >= 0 and figure["unit"], figure
        if figure["reference"]:
            assert figure["ratio"] == pytest.approx(figure["value"] / figure["reference"])
        if figure["goal"] is not None:
            assert isinstance(figure["met"], bool), figure
    if benchmark == "cost":
        assert figures[0]["reference"] == 20  # unique domains of the small workload: 50 requests, 60% repeats
    assert "| benchmark |" in run.stdout  # the Markdown table BENCHMARKS.md quotes


def test_the_precheck_benchmark_runs_at_small_size_with_the_mix_it_claims(tmp_path: Path) -> None:
    out = tmp_path / "precheck.json"
    run = run_group([sys.executable, "-m", "bench.precheck", "--small", "--out", str(out)], timeout=240, cwd=REPO)
    assert run.returncode == 0, run.stderr[-4000:]
    on, off = json.loads(out.read_text())["runs"]
    assert on["site_statuses"] == {"live": 60, "parked": 15, "no_dns": 10, "unreachable": 5, "blocked": 5,
                                   "redirected": 5}
    assert (on["llm_calls"], off["llm_calls"]) == (70, 100)
