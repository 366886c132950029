"""The `firmsift eval` argument parser (kept apart from the command so `firmsift --help` stays instant)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

DEFAULT_SNAPSHOTS = Path("firmsift-data/eval/snapshots")
DEFAULT_CACHE = Path("firmsift-data/eval/llm-cache.jsonl")

DESCRIPTION = """\
Score one or more candidates (model x prompt version x search provider) on a CSV of
hand-labelled domains (columns domain,label with yes/no labels, optional notes), or with
--human-labels on the human answers stored in the database (their notes as notes). Each
candidate answers every domain by the worker's own path: the pre-check, search, then
one LLM call, parsed the same way; no cached answers and no known-company shortcut unless asked.

Evidence: live searches by default; --record saves what each search provider found,
--replay reuses it, so every candidate sees the same evidence and reruns make no search
calls. Each domain is pre-checked once (DNS, then the homepage) as the worker does, unless
--no-precheck or FIRMSIFT_PRECHECK=false: a domain with no DNS, unreachable or parked is
not sent to the LLM and is reported apart, outside the accuracy; --record saves the
statuses with the evidence and --replay reuses them. LLM answers are cached by (model,
API base, prompt hash, evidence hash): an interrupted run resumes without paying twice.
Reports (report.html, report.md, report.json) go to --output; the summary table is
printed on stdout.

Exit codes: 0 reports written, 2 bad labels/candidates file or settings,
130 interrupted (answers so far stay cached)."""


def add_eval_parser(commands: Any) -> None:
    """Add `eval` to the `firmsift` sub-command parsers."""
    command = commands.add_parser("eval", help="score models, prompts and search providers on labelled domains",
                                  description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("labels", type=Path, nargs="?", metavar="LABELS.csv",
                         help="CSV with domain,label[,notes] columns (or --human-labels)")
    command.add_argument("--human-labels", action="store_true",
                         help="score against the human answers of --classifier stored in the database (people's "
                              "corrections: `firmsift answers`) instead of a labels file")
    command.add_argument("--candidates", type=Path, metavar="FILE",
                         help="TOML file of [[candidate]] tables to compare (default: one candidate from the "
                              "settings); see eval/candidates.example.toml")
    command.add_argument("--classifier", default="cpg",
                         help="classifier for candidates that name none (default: cpg)")
    evidence = command.add_mutually_exclusive_group()
    evidence.add_argument("--record", action="store_true", help="search live and save the evidence to --snapshots")
    evidence.add_argument("--replay", action="store_true",
                          help="use only evidence saved by --record (no search calls; fails if any is missing)")
    command.add_argument("--snapshots", type=Path, default=DEFAULT_SNAPSHOTS, metavar="DIR",
                         help=f"evidence snapshot folder (default: {DEFAULT_SNAPSHOTS})")
    command.add_argument("--cache", type=Path, default=DEFAULT_CACHE, metavar="FILE",
                         help=f"LLM response cache (default: {DEFAULT_CACHE})")
    command.add_argument("--no-cache", action="store_true", help="ask the LLM every time; cache nothing")
    command.add_argument("--output", "-o", type=Path, metavar="DIR",
                         help="report folder (default: eval-reports/<UTC time>-<labels file name>)")
    command.add_argument("--concurrency", type=_positive, metavar="N",
                         help="domains answered at once over all candidates (default: FIRMSIFT_LLM_CONCURRENCY)")
    command.add_argument("--known-companies", action="store_true",
                         help="answer domains in the known-companies table as the worker does (reads the database)")
    command.add_argument("--no-precheck", action="store_true",
                         help="send every domain to the LLM without the pre-check (DNS, homepage) the worker runs "
                              "(off as well when FIRMSIFT_PRECHECK=false); with --replay, recorded statuses are ignored")
    command.add_argument("--limit", type=_positive, metavar="N", help="only the first N labelled domains")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value
