"""Evidence text from real pages' markup: `.venv/bin/python -m bench.page_corpus COMMAND`.

The corpus is listed in tests/fixtures/page_corpus.toml (each page's source repository, path,
commit, licence, SHA-256 and a phrase, read by hand, that says what the company sells). The
pages themselves are not in this repository: `collect` copies them out of local git snapshots of
their source repositories, checking each digest, into tests/fixtures/pages/ (see its README).
The evidence measured is what the homepage reader sends (tests/support/page_corpus.evidence_text).

  collect --mirrors DIR   copy each page from DIR/<owner>+<name>/repo (a bare git snapshot)
  time [--dump DIR]       extract_page on every page: wall and CPU milliseconds per page
                          (median of --rounds), whether the hand-checked phrase is in the
                          evidence, and with --dump the evidence text of each page as DIR/<name>.txt
  trafilatura [--dump DIR] the same timing for trafilatura.extract (run it in an environment
                          that has trafilatura; firmsift does not depend on it), with its import
                          time and the resident memory it added
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.page_corpus import PAGES, CorpusPage, evidence_text, load_manifest, read_page


def collect(pages: list[CorpusPage], mirrors: Path, corpus: Path) -> None:
    corpus.mkdir(parents=True, exist_ok=True)
    for page in pages:
        repo = mirrors / page.repo.replace("/", "+") / "repo"
        body = subprocess.run(["git", "-C", str(repo), "show", f"{page.commit}:{page.path}"],
                              check=True, capture_output=True).stdout
        digest = hashlib.sha256(body).hexdigest()
        if digest != page.sha256:
            raise SystemExit(f"{page.name}: sha256 {digest} is not the manifest's {page.sha256}")
        page.file(corpus).write_bytes(body)
    print(f"{len(pages)} pages in {corpus}")


def _timed(extract: Callable[[str], str], html: str, rounds: int) -> tuple[str, float, float]:
    walls, cpus, text = [], [], ""
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        text = extract(html)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return text, statistics.median(walls) * 1000, statistics.median(cpus) * 1000


def measure(pages: list[CorpusPage], corpus: Path, extract: Callable[[str], str], rounds: int,
            dump: Path | None) -> None:
    if dump:
        dump.mkdir(parents=True, exist_ok=True)
    print("| page | KiB | wall ms | CPU ms | phrase found |")
    print("| --- | ---: | ---: | ---: | --- |")
    total_wall = total_cpu = 0.0
    found = 0
    for page in pages:
        html = read_page(page.file(corpus))
        text, wall, cpu = _timed(extract, html, rounds)
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        hit = page.sells.casefold() in text.casefold()
        found += hit
        if dump:
            (dump / f"{page.name}.txt").write_text(text + "\n")
        print(f"| {page.name} | {len(html.encode()) // 1024} | {wall:.2f} | {cpu:.2f} | {'yes' if hit else 'no'} |")
    print(f"| all {len(pages)} | | {total_wall:.1f} | {total_cpu:.1f} | {found}/{len(pages)} |")


def _resident_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def trafilatura_evidence() -> Callable[[str], str]:
    before, started = _resident_mib(), time.perf_counter()
    import trafilatura  # noqa: PLC0415 - measured: its import time and memory are the question

    print(f"trafilatura {trafilatura.__version__}: import {(time.perf_counter() - started) * 1000:.0f} ms, "
          f"+{_resident_mib() - before:.1f} MiB resident")

    def extract(html: str) -> str:
        return trafilatura.extract(html, include_comments=False, include_tables=True) or ""

    return extract


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["collect", "time", "trafilatura"])
    parser.add_argument("--corpus", type=Path, default=PAGES)
    parser.add_argument("--mirrors", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dump", type=Path)
    args = parser.parse_args(argv)
    pages = load_manifest()
    if args.command == "collect":
        if args.mirrors is None:
            parser.error("collect needs --mirrors")
        collect(pages, args.mirrors, args.corpus)
        return
    missing = [page.name for page in pages if not page.file(args.corpus).is_file()]
    if missing:
        parser.error(f"{len(missing)} pages missing from {args.corpus} (run collect first): {', '.join(missing)}")
    extract = evidence_text if args.command == "time" else trafilatura_evidence()
    measure(pages, args.corpus, extract, args.rounds, args.dump)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident {peak:.0f} MiB; python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
