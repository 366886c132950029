"""`firmsift answers`: import people's corrections from a CSV, list or export them, undo one."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from firmsift.domain.errors import InvalidRequest, UnknownClassifier
from firmsift.domain.human_answer_documents import CSV_COLUMNS, csv_cells, csv_header, csv_line, human_answer_document
from firmsift.domain.clock import utc_now
from firmsift.domain.human_answers import HumanAnswer, parse_answer_word, read_human_answer
from firmsift.entrypoints.command_errors import CommandError
from firmsift.entrypoints.files.csv_files import CsvFileError, read_csv_records
from firmsift.services.human_answers import all_human_answers, correct_answer, known_classifier, undo_correction

if TYPE_CHECKING:  # main.py imports this module for its parser: keep `firmsift --help` instant
    from firmsift.services.admin import Admin

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
DEFAULT_CLASSIFIER = "cpg"


def add_answers_parser(commands: Any) -> None:
    """Add `answers import|list|undo` to the `firmsift` sub-command parsers."""
    answers = commands.add_parser(
        "answers", help="import, list or undo human answers (people's corrections)",
        description="A human answer is a person's answer for (domain, classifier), with a note saying why. Every "
                    "later job and batch answers that domain from it (source human, confidence 5, the note as "
                    "the reason), before known companies, the cache or the LLM; nothing the worker stores "
                    "replaces or expires it. The API sets them too (PUT /answers/{classifier}/{domain}).")
    actions = answers.add_subparsers(dest="answers_command", required=True, metavar="ACTION")
    importer = actions.add_parser(
        "import", help="import corrections from a CSV file",
        description="Import a CSV with columns domain, answer (yes, no, true or false), note, and optionally "
                    "classifier (a blank or missing one is --classifier). Each row becomes the human answer "
                    "of its (domain, classifier); one that says the same as the stored one changes nothing, so "
                    "importing a file twice is harmless. Bad rows (and a domain listed twice) are reported with "
                    "their line numbers and skipped; the others are imported. Exits 1 if any row was rejected. "
                    f"`firmsift answers list --csv` writes this format ({', '.join(CSV_COLUMNS)}); the ' it puts "
                    "before a cell a spreadsheet would run as a formula is taken off again, so importing an "
                    "export changes nothing.")
    importer.add_argument("file", type=Path, help="CSV file")
    importer.add_argument("--classifier", default=DEFAULT_CLASSIFIER,
                          help=f"classifier of rows that name none (default: {DEFAULT_CLASSIFIER})")
    listing = actions.add_parser(
        "list", help="print the human answers",
        description="Print every human answer, by classifier then domain: one JSON document a line, or CSV "
                    "with --csv (the format `firmsift answers import` reads).")
    listing.add_argument("--classifier", help="only this classifier's (default: all)")
    listing.add_argument("--csv", action="store_true", help="write CSV instead of JSON lines")
    undo = actions.add_parser(
        "undo", help="undo the latest correction of a domain",
        description="Remove the domain's current human answer and restore what it replaced: an earlier "
                    "human answer, or none (then jobs answer it by the usual path again). Exits 1 when there "
                    "is no human answer to undo.")
    undo.add_argument("domain", help="the domain (normalized as every domain is)")
    undo.add_argument("--classifier", default=DEFAULT_CLASSIFIER, help=f"its classifier (default: {DEFAULT_CLASSIFIER})")


def run_answers(admin: Admin, args: argparse.Namespace) -> int:
    try:
        if args.answers_command == "import":
            return asyncio.run(_import(admin, args.file, args.classifier))
        if args.answers_command == "list":
            classifier = known_classifier(args.classifier, admin.catalog) if args.classifier else None
            return asyncio.run(_list(admin, classifier, as_csv=args.csv))
        undone = asyncio.run(undo_correction(args.domain, args.classifier, catalog=admin.catalog,
                                             store=admin.human_answers))
    except (InvalidRequest, UnknownClassifier) as error:
        print(f"firmsift: {_problem(error)}", file=sys.stderr)
        return EXIT_USAGE
    removed = undone.removed
    now = (f"restored {'yes' if undone.restored.answer else 'no'} ({undone.restored.note})"
           if undone.restored is not None else "no human answer now")
    print(f"removed the human answer {'yes' if removed.answer else 'no'} for {removed.domain} "
          f"({removed.classifier}); {now}")
    return EXIT_OK


async def _import(admin: Admin, path: Path, default_classifier: str) -> int:
    try:
        records = read_csv_records(path, ("domain", "answer", "note"))
    except CsvFileError as error:
        raise CommandError(str(error)) from None
    catalog, store = admin.catalog, admin.human_answers
    problems: list[str] = []
    rows: list[HumanAnswer] = []
    seen: dict[tuple[str, str], int] = {}
    for line, written in records:
        record = csv_cells(written)  # our own export's escaping undone: importing it back changes nothing
        try:
            human = read_human_answer(record.get("domain", ""),
                                      known_classifier(record.get("classifier") or default_classifier, catalog),
                                      parse_answer_word(record.get("answer", "")), record.get("note", ""),
                                      corrected_by=None, corrected_at=utc_now())
        except (InvalidRequest, UnknownClassifier, ValueError) as error:
            problems.append(f"line {line}: {_problem(error)}")
            continue
        if human.key in seen:  # which of the two is meant cannot be guessed; taking both would not be idempotent
            problems.append(f"line {line}: {human.domain} ({human.classifier}) is listed twice "
                            f"(first on line {seen[human.key]})")
            continue
        seen[human.key] = line
        rows.append(human)
    changed = 0
    for human in rows:
        corrected = await correct_answer(human.domain, human.classifier, human.answer, human.note,
                                         corrected_by=None, catalog=catalog, store=store)
        changed += corrected.changed
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"imported {changed} human answer(s), {len(rows) - changed} unchanged; {len(problems)} row(s) rejected")
    return EXIT_FAILURE if problems else EXIT_OK


async def _list(admin: Admin, classifier: str | None, *, as_csv: bool) -> int:
    if as_csv:
        sys.stdout.write(csv_header())
    count = 0
    async for human in all_human_answers(admin.human_answers, classifier):
        sys.stdout.write(csv_line(human) if as_csv else json.dumps(human_answer_document(human)) + "\n")
        count += 1
    print(f"{count} human answer(s)", file=sys.stderr)
    return EXIT_OK


def _problem(error: Exception) -> str:
    if not isinstance(error, InvalidRequest):
        return str(error)
    return "; ".join(r.reason for r in error.rejections) or error.message
