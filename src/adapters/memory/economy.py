"""In-memory economy mode: deferred questions over an InMemoryBatches, and a provider batch API
that answers every request of a batch with a scripted LLM (tests and the teaching harness)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from firmsift.adapters.memory.batches import InMemoryBatches
from firmsift.adapters.memory.providers import SCRIPTED_ANSWER
from firmsift.domain.economy import BatchMode, DeferredQuestion, Deferral, ProviderBatch, ProviderBatchStatus
from firmsift.domain.batches import BATCH_CANCELLED_RUNNING, BATCH_CANCELLED_WAITING
from firmsift.domain.model import Answer, JobStatus, ResultStatus, Source


class InMemoryDeferredQuestions:
    """Implements ports.economy.DeferredQuestions; answers go to the batches' InMemoryStore."""

    def __init__(self, batches: InMemoryBatches) -> None:
        self.batches = batches
        self.questions: dict[str, DeferredQuestion] = {}  # by custom id, in the order deferred
        self.placed: dict[str, str] = {}  # custom id -> provider batch id
        self.waiters: dict[str, list[str]] = {}  # custom id -> job ids, in the order they asked
        self.provider_batches: dict[str, ProviderBatch] = {}
        self.closed: set[str] = set()
        batches.withdrawals.append(self.withdraw)

    async def withdraw(self, job_ids: list[str]) -> int:
        """As SqlBatches.cancel does for economy mode: fail the RUNNING jobs of `job_ids` waiting
        here, take them off every waiter list, forget the unsent questions no job waits for."""
        cancelled = set(job_ids)
        waiting = {job_id for waiters in self.waiters.values() for job_id in waiters if job_id in cancelled}
        failed = 0
        for job_id in sorted(waiting):
            if await self.batches.store.set_job_status(job_id, JobStatus.FAILED, BATCH_CANCELLED_WAITING,
                                                       only_from=(JobStatus.RUNNING,)):
                failed += 1
        for key, waiters in list(self.waiters.items()):
            waiters[:] = [job_id for job_id in waiters if job_id not in cancelled]
            if not waiters and key not in self.placed:
                del self.waiters[key]
                self.questions.pop(key, None)
        return failed

    async def deferral(self, job_id: str) -> Deferral | None:
        batch = self.batches.batches.get(self.batches.job_batch.get(job_id, ""))
        return Deferral(batch.refresh) if batch is not None and batch.mode is BatchMode.ECONOMY else None

    async def stale_answers(self, classifier: str, answered_before: datetime, limit: int) -> list[str]:
        stale = sorted((answer.answered_at, answer.domain) for (_domain, name), answer in self.batches.store.answers.items()
                       if name == classifier and answer.source is Source.LLM and answer.status is ResultStatus.DONE
                       and answer.answered_at < answered_before)
        return [domain for _at, domain in stale[:limit]]

    async def defer(self, question: DeferredQuestion, job_id: str) -> bool:
        batch = self.batches.batches.get(self.batches.job_batch.get(job_id, ""))
        if batch is not None and batch.cancelled_at is not None:  # as SqlDeferredQuestions.defer
            await self.batches.store.set_job_status(job_id, JobStatus.FAILED, BATCH_CANCELLED_RUNNING,
                                                    only_from=(JobStatus.RUNNING,))
            return False
        job = self.batches.store.jobs.get(job_id)
        if job is None or job.status.finished:
            return False
        self.questions.setdefault(question.custom_id, question)
        waiting = self.waiters.setdefault(question.custom_id, [])
        if job_id not in waiting:
            waiting.append(job_id)
        return True

    async def unsent(self, limit: int) -> list[DeferredQuestion]:
        return [q for key, q in self.questions.items() if key not in self.placed][:limit]

    async def record_provider_batch(self, batch: ProviderBatch, questions: Sequence[DeferredQuestion]) -> None:
        self.provider_batches[batch.id] = batch
        for question in questions:
            self.placed[question.custom_id] = batch.id

    async def forget_unwaited(self, provider_batch_id: str) -> None:
        for key, placed in list(self.placed.items()):
            if placed == provider_batch_id and not self.waiters.get(key):
                del self.placed[key]
                self.questions.pop(key, None)
                self.waiters.pop(key, None)

    async def update_provider_batch(self, batch: ProviderBatch) -> None:
        self.provider_batches[batch.id] = batch

    async def provider_batches_in_flight(self) -> list[ProviderBatch]:
        return [batch for key, batch in self.provider_batches.items() if key not in self.closed]

    async def questions_in(self, provider_batch_id: str) -> list[DeferredQuestion]:
        return [q for key, q in self.questions.items() if self.placed.get(key) == provider_batch_id]

    async def waiting_jobs(self, question: DeferredQuestion) -> list[str]:
        return list(self.waiters.get(question.custom_id, []))

    async def answered(self, question: DeferredQuestion, answer: Answer, given: Sequence[str]) -> list[str]:
        self.batches.store.answers[(answer.domain, answer.classifier)] = answer
        late = [job_id for job_id in self.waiters.pop(question.custom_id, []) if job_id not in given]
        self.questions.pop(question.custom_id, None)
        self.placed.pop(question.custom_id, None)
        return late

    async def send_again(self, question: DeferredQuestion, *, count: bool = True) -> None:
        self.placed.pop(question.custom_id, None)
        self.questions[question.custom_id] = replace(question, attempts=question.attempts + (1 if count else 0))

    async def close_provider_batch(self, batch: ProviderBatch) -> None:
        self.closed.add(batch.id)


class InMemoryBatchProvider:
    """Implements ports.economy.BatchProvider: a created batch is COMPLETED at the first retrieve,
    its output file holding `answer(question)` for each request (a chat completion body, or None
    for a request the provider drops: it is then missing from both files; by default ScriptedLLM's
    answer). Records every call."""

    def __init__(self, answer: Callable[[DeferredQuestion], dict[str, object] | None] | None = None) -> None:
        self.answer = answer or (lambda question: chat_completion(SCRIPTED_ANSWER))
        self.files: dict[str, list[str]] = {}
        self.inputs: dict[str, list[DeferredQuestion]] = {}
        self.created: dict[str, ProviderBatch] = {}  # by our provider batch id
        self.calls: list[str] = []
        self._ids = itertools.count(1)

    async def upload(self, provider_batch_id: str, questions: Sequence[DeferredQuestion]) -> str:
        self.calls.append("upload")
        file_id = f"file-{next(self._ids)}"
        self.inputs[file_id] = list(questions)
        return file_id

    async def create(self, provider_batch_id: str, input_file_id: str) -> ProviderBatch:
        self.calls.append("create")
        batch = ProviderBatch(id=provider_batch_id, status=ProviderBatchStatus.VALIDATING,
                              input_file_id=input_file_id, batch_id=f"batch_{next(self._ids)}")
        self.created[provider_batch_id] = batch
        return batch

    async def find(self, provider_batch_id: str) -> ProviderBatch | None:
        self.calls.append("find")
        return self.created.get(provider_batch_id)

    async def retrieve(self, batch: ProviderBatch) -> ProviderBatch:
        self.calls.append("retrieve")
        output_id = f"file-{next(self._ids)}"
        lines = []
        for question in self.inputs[batch.input_file_id or ""]:
            body = self.answer(question)
            if body is not None:
                lines.append(_output_line(question.custom_id, body))
        self.files[output_id] = lines
        return replace(batch, status=ProviderBatchStatus.COMPLETED, output_file_id=output_id)

    async def lines(self, file_id: str) -> list[str]:
        self.calls.append("lines")
        return list(self.files[file_id])


def chat_completion(text: str, prompt_tokens: int = 1000, completion_tokens: int = 100) -> dict[str, object]:
    """A chat completion body answering `text`, as an output file line carries it."""
    return {"id": "chatcmpl-memory", "object": "chat.completion", "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def _output_line(custom_id: str, body: dict[str, object]) -> str:
    return json.dumps({"id": f"batch_req_{custom_id}", "custom_id": custom_id,
                       "response": {"status_code": 200, "request_id": "req_memory", "body": body}, "error": None})
