"""`firmsift batch cancel|retry BATCH_ID`: what DELETE /batches/{id} and POST /batches/{id}/retry do,
from the command line, on the service's database and queue (the operator's: any owner's batch)."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from firmsift.domain.errors import FirmsiftError
from firmsift.entrypoints.cli.batch_lookup import operator_batch
from firmsift.entrypoints.command_errors import EXIT_OK, CommandError
from firmsift.services.batch_retry import retry_failed_rows
from firmsift.services.batches import cancel_batch

if TYPE_CHECKING:  # the use-cases only when the command runs
    from firmsift.services.admin import Admin


def add_batch_parser(commands: Any) -> None:
    batch = commands.add_parser(
        "batch", help="cancel a batch, or retry its failed rows",
        description="Act on a batch by its id, as DELETE /batches/{id} and POST /batches/{id}/retry do (the web app "
                    "has the same buttons): on the service's database and queue, whoever owns the batch.")
    actions = batch.add_subparsers(dest="batch_command", required=True, metavar="ACTION")
    cancel = actions.add_parser("cancel", help="cancel what has not started (work started or finished is kept)")
    cancel.add_argument("batch_id")
    retry = actions.add_parser(
        "retry", help="retry the failed rows: their domains asked again on the cheapest path, answered ones kept",
        description="Queue the batch's failed domains again (and its jobs that failed as a whole, not cancelled "
                    "ones); answered domains are kept, nothing is paid twice. A cancelled batch is refused.")
    retry.add_argument("batch_id")


def run_batch(admin: Admin, args: argparse.Namespace) -> int:
    async def act() -> str:
        batch = await operator_batch(admin, args.batch_id)
        if args.batch_command == "cancel":
            cancelled = await cancel_batch(batch, admin.batches, admin.batch_replies)
            return f"batch {batch.id}: {cancelled} job(s) cancelled; work started or finished is kept"
        retried = await retry_failed_rows(batch, admin.batches, admin.work_queue)
        if not retried:
            return f"batch {batch.id}: nothing had failed; nothing to retry"
        return f"batch {batch.id}: {retried} job(s) with failed rows queued again; answered rows are kept"

    try:
        print(asyncio.run(act()))
    except FirmsiftError as error:
        raise CommandError(str(error)) from None
    return EXIT_OK

