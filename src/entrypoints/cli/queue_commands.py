"""`firmsift replies`, `queues` and `dlq`: reading the embedded backend's reply queues, checking (or
creating) the declared SQS queues, and the jobs the dead-letter queue ended."""

from __future__ import annotations

import json
import sys

from firmsift.entrypoints.command_errors import EXIT_FAILURE, EXIT_OK, CommandError
from firmsift.ports.reply_reading import ReplyReading
from firmsift.services.admin import Admin
from firmsift.services.dead_letters import DEAD_LETTER_ERROR, redrive_dead_lettered


async def read_replies(queue: ReplyReading, queue_name: str, limit: int, wait: float, keep: bool) -> int:
    messages = await queue.read_messages(limit=limit, wait_seconds=wait, consume=not keep)
    for message in messages:
        print(message.body)
    print(f"{len(messages)} repl{'y' if len(messages) == 1 else 'ies'} read from {queue_name}", file=sys.stderr)
    return EXIT_OK


def declared_queues(report: list[str], *, apply: bool) -> int:
    """Print the declared queues' report; exit 1 when checking found a queue out of line."""
    for line in report:
        print(line)
    in_sync = all(line.endswith("in sync") for line in report)
    return EXIT_OK if apply or in_sync else EXIT_FAILURE


async def dead_letters(admin: Admin, action: str, limit: int) -> int:
    """Workers drain the dead-letter queue into FAILED jobs; these commands work from that record."""
    if limit < 1:
        raise CommandError("--max must be at least 1")
    store = admin.jobs
    if action == "list":
        failed = await store.list_failed_jobs(error=DEAD_LETTER_ERROR, limit=limit)
        for job in failed:
            print(json.dumps({"job_id": job.id, "classifier": job.classifier, "created_at": job.created_at.isoformat(),
                              "domains": len(job.domains),
                              "unfinished": sum(r.status.value == "PENDING" for r in job.results)}))
        print(f"{len(failed)} dead-lettered job(s) shown", file=sys.stderr)
        return EXIT_OK
    retried = await redrive_dead_lettered(store, admin.work_queue, limit=limit)
    print(f"sent {len(retried)} dead-lettered job(s) back to the work queue")
    return EXIT_OK
