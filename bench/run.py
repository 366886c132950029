"""Run the benchmarks: `.venv/bin/python -m bench.run [latency|throughput|accept|cost|idle|all] [--small]`.

Each benchmark starts real `firmsift` processes against fake LLM and search servers with fixed
latencies, prints its figures as a Markdown table and, with --out, writes them as JSON."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench import accept, cost, idle, latency, throughput
from bench.figures import Figure, machine, markdown_table
from bench.harness import SHAPES, Latencies

Benchmark = Callable[[list[str], Path, Latencies, bool], list[Figure]]

BENCHMARKS: dict[str, Benchmark] = {
    "latency": lambda shapes, folder, lat, small: latency.run(shapes, folder, lat, latency.SMALL if small else latency.FULL),
    "throughput": lambda shapes, folder, lat, small: throughput.run(
        shapes, folder, lat, throughput.SMALL if small else throughput.FULL),
    "accept": lambda shapes, folder, lat, small: accept.run(shapes, folder, lat, accept.SMALL if small else accept.FULL),
    # The forced redelivery needs a queue outside the stalled process's database: production only.
    "cost": lambda _shapes, folder, lat, small: cost.run(folder, lat, cost.SMALL if small else cost.FULL),
    "idle": lambda shapes, folder, lat, small: idle.run(shapes, folder, lat, idle.SMALL if small else idle.FULL),
}
FULL_LATENCIES = Latencies(llm=1.0, search=0.2)
SMALL_LATENCIES = Latencies(llm=0.2, search=0.05)  # --small checks that everything runs, not timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("benchmark", choices=[*BENCHMARKS, "all"])
    parser.add_argument("--small", action="store_true", help="tiny sizes and latencies: a smoke run, not figures")
    parser.add_argument("--shape", action="append", choices=SHAPES, dest="shapes",
                        help="backend shape to measure (repeatable; default: both)")
    parser.add_argument("--llm-latency", type=float, help="seconds per fake LLM answer (default 1.0; --small 0.2)")
    parser.add_argument("--search-latency", type=float, help="seconds per fake search (default 0.2; --small 0.05)")
    parser.add_argument("--out", type=Path, help="write the figures and the machine as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the processes' logs and databases")
    args = parser.parse_args(argv)
    defaults = SMALL_LATENCIES if args.small else FULL_LATENCIES
    latencies = Latencies(llm=args.llm_latency or defaults.llm, search=args.search_latency or defaults.search)
    names = list(BENCHMARKS) if args.benchmark == "all" else [args.benchmark]
    folder = Path(tempfile.mkdtemp(prefix="firmsift-bench-"))
    figures: list[Figure] = []
    try:
        for name in names:
            print(f"running {name}...", file=sys.stderr, flush=True)
            figures += BENCHMARKS[name](args.shapes or list(SHAPES), folder, latencies, args.small)
    finally:
        if args.keep:
            print(f"logs and databases kept in {folder}", file=sys.stderr)
        else:
            _remove(folder)
    report = {"machine": machine(), "latencies": {"llm": latencies.llm, "search": latencies.search},
              "small": args.small, "figures": [f.as_dict() for f in figures]}
    print(markdown_table(figures))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _remove(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    folder.rmdir()


if __name__ == "__main__":
    sys.exit(main())
