"""What processing a job needs: the ports, the classifiers, and the worker-wide limits."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from firmsift.domain.clock import utc_now
from firmsift.domain.freshness import is_fresh
from firmsift.domain.model import Answer, Classifier, DomainResult
from firmsift.machinery.inflight import InFlight
from firmsift.services.held_answers import HeldAnswers
from firmsift.services.precheck import Precheck

if TYPE_CHECKING:
    from firmsift.ports.economy import DeferredQuestions
    from firmsift.ports.human_answers import HumanAnswerStore
    from firmsift.ports.leases import AnswerLeases
    from firmsift.ports.providers import LLM, Pricing, Search
    from firmsift.ports.repository import AnswerStore, JobRepository, KnownCompanies
    from firmsift.services.spend_gate import SpendGate


@dataclass
class JobDependencies:
    """Everything process_job needs: the ports, the classifiers, and the worker-wide limits."""

    jobs: JobRepository
    answers: AnswerStore
    known: KnownCompanies
    search: Search
    llm: LLM
    pricing: Pricing  # what the LLM's tokens cost, recorded with each answer
    catalog: Mapping[str, Classifier]
    llm_slots: asyncio.Semaphore  # worker-wide cap on concurrent LLM calls
    domain_concurrency: int = 10
    now: Callable[[], datetime] = utc_now
    new_marker: Callable[[], str] = lambda: secrets.token_hex(12)
    inflight: InFlight[tuple[Answer, bool]] = field(default_factory=InFlight)
    # Answers the database would not store, kept until it does (the worker runs save_held_answers).
    held: HeldAnswers = field(default_factory=HeldAnswers)
    on_result: Callable[[DomainResult], None] = lambda result: None  # e.g. count domains by path
    # Across workers: who is asking the LLM about a domain right now (None: this worker only).
    leases: AnswerLeases | None = None
    lease_holder: str = field(default_factory=lambda: uuid.uuid4().hex)
    lease_seconds: float = 20.0  # renewed while the call runs; a dead worker's lease lapses this soon
    lease_poll_seconds: float = 0.5
    lease_wait_seconds: float = 300.0  # longest wait for another worker's answer before asking anyway
    precheck: Precheck | None = None  # a cheap look at the domain before the LLM (None: off)
    # Holds each domain's expected cost against the daily limits of its job's owner (its API key
    # id) before the pre-check and the LLM, and drops the hold once the result is stored (None: no
    # spend limits).
    spend_gate: SpendGate | None = None
    # Another classifier's evidence for the domain searched this recently is reused instead of
    # searching again (None: always search); each reuse is told to on_evidence_reused(classifier).
    evidence_reuse_age: timedelta | None = None
    on_evidence_reused: Callable[[str], None] = lambda classifier: None
    human: HumanAnswerStore | None = None  # people's corrections, used before every other path (None: none)
    # Economy mode: the questions of a job whose batch asked for it wait for the provider's batch
    # API (services/provider_batches.py) instead of being asked now (None: every job asks now).
    deferred: DeferredQuestions | None = None
    # A model's output that could not be read is asked again this many times: free toward a local
    # server, whose small models now and then write broken JSON (0: a failed row, retried on request).
    unreadable_retries: int = 0

    def is_fresh(self, answer: Answer, classifier: Classifier) -> bool:
        """Whether `answer` may be reused now; a pre-check outcome for the pre-check's max age, and
        not at all while the pre-check is off."""
        max_age = self.precheck.max_age if self.precheck is not None else None
        return is_fresh(answer, self.now(), classifier.prompt_version, precheck_max_age=max_age)
