"""The operator's application object: what `firmsift`'s commands may do to a running service."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from firmsift.domain.model import Classifier
from firmsift.ports.batches import BatchIntake, BatchStore
from firmsift.ports.economy import DeferredQuestions
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.ports.keys import ApiKeyStore
from firmsift.ports.queue import WorkQueue
from firmsift.ports.repository import ForgetsAnswers, JobRepository, KnownCompanies
from firmsift.services.batches import BatchReplies
from firmsift.services.budgets import Budgets


@dataclass(frozen=True)
class Admin:
    """Everything the operator commands (keys, answers, companies, batch, refresh, forget, dlq)
    are given, built by the wiring (wiring/container.py): the classifiers, the batch limits and the
    stores and queues the use-cases in services/ run over."""

    catalog: Mapping[str, Classifier]
    max_domains_per_job: int
    max_domains_per_batch: int
    api_keys: ApiKeyStore
    budgets: Budgets
    human_answers: HumanAnswerStore
    jobs: JobRepository
    answers: ForgetsAnswers
    known: KnownCompanies
    batches: BatchStore
    batch_replies: BatchReplies
    work_queue: WorkQueue
    batch_intake: BatchIntake
    deferred_questions: DeferredQuestions
