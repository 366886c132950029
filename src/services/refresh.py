"""`firmsift refresh`: the LLM's cached answers older than a given age, asked again in economy
mode (at the batch price) before they expire, as one batch of at most max_domains domains."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from firmsift.domain.batches import Batch, BatchPlan, InputRow
from firmsift.domain.clock import utc_now
from firmsift.domain.economy import BatchMode
from firmsift.domain.errors import UnknownClassifier
from firmsift.domain.normalize import normalize_domain
from firmsift.services.submit import new_job_id

if TYPE_CHECKING:
    from firmsift.domain.model import Classifier
    from firmsift.ports.batches import BatchIntake
    from firmsift.ports.economy import DeferredQuestions


async def refresh_stale_answers(classifier: str, older_than: timedelta, *, catalog: Mapping[str, Classifier],
                                questions: DeferredQuestions, intake: BatchIntake, job_size: int, max_domains: int,
                                new_id: Callable[[], str] = new_job_id,
                                now: Callable[[], datetime] = utc_now) -> Batch | None:
    """Submit an economy batch (flagged `refresh`, so its jobs ask again though the answers are
    fresh) of the oldest `max_domains` of `classifier`'s LLM answers given more than `older_than`
    ago; None when there is none. Run it again for the next ones: a refreshed answer is new."""
    if classifier not in catalog:
        raise UnknownClassifier(classifier, tuple(sorted(catalog)))
    domains = await questions.stale_answers(classifier, now() - older_than, max_domains)
    if not domains:
        return None
    batch = Batch(id=new_id(), classifier=classifier, created_at=now(), mode=BatchMode.ECONOMY, refresh=True,
                  request_hash=f"refresh:{classifier}:{older_than.total_seconds():.0f}")
    rows = (InputRow(position, None, json.dumps(domain), domain) for position, domain in enumerate(domains))
    plan = BatchPlan(batch, rows, read_domain=normalize_domain, job_size=job_size, max_domains=max_domains,
                     new_job_id=new_id)
    return await intake.accept(plan)
