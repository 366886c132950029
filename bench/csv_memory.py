"""Benchmark: `firmsift classify --csv` streams. Peak resident memory of the CLI classifying a
1,000,000-row CSV against a stand-in API that answers at once (tests/support/fake_api_server.py),
set against the same run on 20,000 rows (enough to fill the client's window of rows and its memory of
recent answers): held in memory, a file 50 times longer would cost ~50 times more. The stand-in has
no /batches, so this measures the jobs path (the client's fallback for an API without batches).

    .venv/bin/python -m bench.csv_memory                  # 20,000 then 1,000,000 rows (~15 minutes on 2 busy cores)
    .venv/bin/python -m bench.csv_memory --small          # 1,000 then 5,000 rows: checks it runs, no goal
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.figures import Figure, report
from tests.support.processes import REPO

MEMORY_GOAL = 1.25  # peak RSS on the long file / on the short one
BATCH = 100  # domains per job: the stand-in allows it, so the run is about the CLI, not round trips


@dataclass(frozen=True)
class Run:
    rows: int
    peak_mib: float
    seconds: float
    output_rows: int


def write_messy_csv(path: Path, rows: int) -> None:
    """Rows as exports have them: URLs with paths, upper case, several domains, blank cells (1 in 20);
    every domain distinct, so nothing is answered from the client's memory of recent answers."""
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "Company", "Website", "Notes"])
        for n in range(rows):
            site = ("", f"https://www.company{n}.com/en-us/", f"COMPANY{n}.COM", f"company{n}.com other{n}.com",
                    f"www.company{n}.com /about /")[0 if n % 20 == 0 else 1 + n % 4]
            writer.writerow([n, f"Company {n}, Inc.", site, "line one\nline two" if n % 50 == 0 else ""])


def classify(folder: Path, rows: int, api: str) -> Run:
    source, output = folder / f"in-{rows}.csv", folder / f"out-{rows}.csv"
    write_messy_csv(source, rows)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "firmsift.entrypoints.cli.main", "classify", "--csv", str(source), "--column", "website",
         "--api", api, "--batch-size", str(BATCH), "--poll-interval", "0.01", "-o", str(output)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=(folder / f"classify-{rows}.log").open("wb"))
    _pid, status, usage = os.wait4(process.pid, 0)  # this child's own peak RSS, in KiB on Linux
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    if process.returncode not in (0, 3):  # 3: finished with rejected rows (the blank cells)
        raise RuntimeError(f"classify exited {process.returncode}: {(folder / f'classify-{rows}.log').read_text()[-2000:]}")
    with output.open(newline="", encoding="utf-8") as handle:
        output_rows = sum(1 for _ in csv.reader(handle)) - 1
    if output_rows != rows:
        raise RuntimeError(f"{rows} rows in, {output_rows} out")
    source.unlink()
    output.unlink()
    return Run(rows, usage.ru_maxrss / 1024, seconds, output_rows)


def run(folder: Path, short: int, long: int, small: bool = False) -> list[Figure]:
    fake = subprocess.Popen([sys.executable, "-m", "tests.support.fake_api_server", "--port", "0",
                             "--max-domains", str(BATCH), "--polls-to-finish", "1"],
                            cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert fake.stdout is not None
        api = f"http://127.0.0.1:{int(fake.stdout.readline())}"
        baseline, measured = classify(folder, short, api), classify(folder, long, api)
    finally:
        fake.terminate()
        fake.wait(10)
    return [
        Figure("csv_memory", "bare", f"classify --csv, {long:,} rows: peak resident memory", round(measured.peak_mib, 1),
               "MiB", reference=round(baseline.peak_mib, 1), reference_name=f"{short:,} rows, same run",
               goal=None if small else MEMORY_GOAL),
        Figure("csv_memory", "bare", f"classify --csv, {long:,} rows: rows per second",
               round(measured.rows / measured.seconds), "rows/s",
               note=f"{measured.seconds:.0f} s against a stand-in API answering at once, jobs of {BATCH}"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.csv_memory", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="1,000 and 5,000 rows: checks that it runs")
    parser.add_argument("--out", type=Path, help="write the figures and the machine as JSON here")
    args = parser.parse_args(argv)
    short, long = (1_000, 5_000) if args.small else (20_000, 1_000_000)
    with tempfile.TemporaryDirectory(prefix="firmsift-bench-csv-") as folder:
        figures = run(Path(folder), short, long, small=args.small)
    report(figures, args.out, small=args.small)
    return 0 if all(f.met is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
