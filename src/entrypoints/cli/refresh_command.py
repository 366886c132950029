"""`firmsift refresh --older-than 50d [--classifier C]`: ask again, in economy mode, about the
LLM's cached answers older than that, before they expire."""

from __future__ import annotations

import argparse
import asyncio
import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from firmsift.services.refresh import refresh_stale_answers
from firmsift.entrypoints.command_errors import EXIT_OK

if TYPE_CHECKING:  # the use-cases only when the command runs
    from firmsift.services.admin import Admin

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*d?\s*$")


def age(text: str) -> timedelta:
    """An age in days: `50d` or `50`."""
    found = _AGE.match(text)
    if found is None:
        raise argparse.ArgumentTypeError(f"an age in days, such as 50d, not {text!r}")
    return timedelta(days=float(found.group(1)))


def add_refresh_parser(commands: Any) -> None:
    text = ("ask the LLM again, through the provider's batch API (economy mode, half the price), about "
            "cached answers older than an age, before they expire; one batch of at most "
            "FIRMSIFT_MAX_DOMAINS_PER_BATCH domains, the oldest first (run it again for more)")
    refresh = commands.add_parser("refresh", help=text, description=text)
    refresh.add_argument("--older-than", type=age, required=True, metavar="AGE",
                         help="answers given more than this many days ago, e.g. 50d (fresh answers last 60 or 30 "
                              "days by confidence)")
    refresh.add_argument("--classifier", default="cpg", help="the classifier whose answers to refresh (default cpg)")


def run_refresh(admin: Admin, args: argparse.Namespace) -> int:
    batch = asyncio.run(refresh_stale_answers(
        args.classifier, args.older_than, catalog=admin.catalog, questions=admin.deferred_questions,
        intake=admin.batch_intake, job_size=admin.max_domains_per_job,
        max_domains=admin.max_domains_per_batch))
    if batch is None:
        print(f"no {args.classifier} answer older than {args.older_than.days} days to refresh")
        return EXIT_OK
    print(f"batch {batch.id}: {batch.accepted} answer(s) to refresh in economy mode; "
          f"follow it with GET /batches/{batch.id}")
    return EXIT_OK
