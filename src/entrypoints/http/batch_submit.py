"""Submitting a batch, as POST /batches and the web app's form both do: the caller's daily spend
limit checked first (before the body is read), then the rows planned and written, and the batch's
reply sent at once when no job will end it (every row rejected)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from firmsift.domain.keys import Caller
from firmsift.domain.model import Classifier
from firmsift.entrypoints.settings import Settings
from firmsift.ports.batches import BatchIntake, BatchStore
from firmsift.services.batch_intake import BatchSubmission, SubmitBatch, submit_batch
from firmsift.services.batches import BatchReplies
from firmsift.services.budgets import Budgets


@dataclass(frozen=True)
class BatchSubmitter:
    """The one way a batch is submitted: on the API's settings, classifiers, stores, replies and spend limits."""

    settings: Settings
    catalog: Mapping[str, Classifier]
    intake: BatchIntake
    batches: BatchStore
    replies: BatchReplies
    budgets: Budgets
    deadline: Callable[[], AbstractAsyncContextManager[None]]

    async def check_budget(self, caller: Caller) -> None:
        """BudgetExhausted (429 budget_exhausted) when the caller's daily limit is spent: asked
        before the body is read, so a refused request costs no reading."""
        async with self.deadline():
            await self.budgets.check(caller)

    async def submit(self, command: SubmitBatch) -> BatchSubmission:
        """The batch `command` asks for, its rows planned into jobs and written; a replayed
        Idempotency-Key gives the first request's batch, whose reply that request already sent."""
        submission = await submit_batch(command, catalog=self.catalog, intake=self.intake, batches=self.batches,
                                        job_size=self.settings.max_domains_per_job,
                                        max_domains=self.settings.max_domains_per_batch)
        if not submission.replayed:
            await self.replies.reply_if_ended(submission.batch.id)  # every row rejected: no job will end it
        return submission
