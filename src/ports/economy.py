"""Economy-mode ports: the questions waiting for the provider's batch API (and the provider batches
they went out in), and the provider's files and batches endpoints."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from firmsift.domain.economy import DeferredQuestion, Deferral, ProviderBatch
from firmsift.domain.model import Answer


class DeferredQuestions(Protocol):
    async def deferral(self, job_id: str) -> Deferral | None:
        """How the job's questions to the LLM wait for the provider's batch API (its batch was
        submitted in economy mode), or None: they are asked at once."""

    async def stale_answers(self, classifier: str, answered_before: datetime, limit: int) -> list[str]:
        """Up to `limit` domains whose cached answer for `classifier` is the LLM's, DONE, and
        given before `answered_before`, oldest first."""

    async def defer(self, question: DeferredQuestion, job_id: str) -> bool:
        """Record the question as waiting, with the job among those waiting for its answer. A
        question already waiting for the same (domain, classifier) is kept as it is (never asked
        twice); the job is added to its waiters. False, and nothing recorded, when the job has
        ended or its batch was cancelled (checked in the same transaction, so a cancel is either
        seen here or sees the waiter): a question nobody waits for is never sent. A job of a
        cancelled batch still RUNNING (cancelled by a version that left running jobs alone) is
        failed (BATCH_CANCELLED_RUNNING) in that transaction."""

    async def unsent(self, limit: int) -> list[DeferredQuestion]:
        """Up to `limit` waiting questions that are in no provider batch, oldest first."""

    async def record_provider_batch(self, batch: ProviderBatch, questions: Sequence[DeferredQuestion]) -> None:
        """Record a new provider batch (before anything is uploaded) and put `questions` in it."""

    async def forget_unwaited(self, provider_batch_id: str) -> None:
        """Forget the questions of the provider batch that no job waits for any more (their
        batches were cancelled after the questions were put in it): called just before its input
        file is uploaded, so they are never sent."""

    async def update_provider_batch(self, batch: ProviderBatch) -> None:
        """Record how far the provider batch got (file and batch ids, status)."""

    async def provider_batches_in_flight(self) -> list[ProviderBatch]:
        """The provider batches whose answers are not all read yet, oldest first."""

    async def questions_in(self, provider_batch_id: str) -> list[DeferredQuestion]:
        """The questions still waiting in that provider batch."""

    async def waiting_jobs(self, question: DeferredQuestion) -> list[str]:
        """The ids of the jobs waiting for the question's answer, in the order they asked."""

    async def answered(self, question: DeferredQuestion, answer: Answer, given: Sequence[str]) -> list[str]:
        """Store the answer in the cache (as the LLM's) and forget the question and its waiters,
        in one transaction; returns the waiters not in `given` (jobs that began waiting after
        the answer was given to those), for the caller to give it to them too."""

    async def send_again(self, question: DeferredQuestion, *, count: bool = True) -> None:
        """Take the question out of its provider batch, counting the attempt (unless `count` is
        False: the batch never ran), so the next provider batch asks it again."""

    async def close_provider_batch(self, batch: ProviderBatch) -> None:
        """Note that every answer of the provider batch was read (no question waits in it)."""


class BatchProvider(Protocol):
    """The provider's batch API: an input file of requests, a batch over it, its result files."""

    async def upload(self, provider_batch_id: str, questions: Sequence[DeferredQuestion]) -> str:
        """Upload the questions as a batch input file; its file id."""

    async def create(self, provider_batch_id: str, input_file_id: str) -> ProviderBatch:
        """Create the provider's batch over an uploaded file, naming ours in its metadata."""

    async def find(self, provider_batch_id: str) -> ProviderBatch | None:
        """The provider's batch whose metadata names ours, or None when none was created."""

    async def retrieve(self, batch: ProviderBatch) -> ProviderBatch:
        """The batch as the provider reports it now (status, output and error files)."""

    async def lines(self, file_id: str) -> list[str]:
        """The lines of a result (output or error) file."""
