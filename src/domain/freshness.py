"""Cache freshness: how long a stored answer may be reused, by its confidence."""

from __future__ import annotations

from datetime import datetime, timedelta

from firmsift.domain.model import Answer, ResultStatus

CONFIDENT_MAX_AGE = timedelta(days=60)  # confidence 4-5: confident answers save money
UNSURE_MAX_AGE = timedelta(days=30)  # confidence 2-3: uncertain ones get checked sooner


def max_age(confidence: int | None) -> timedelta | None:
    """How long an answer of this confidence may be reused; None means never."""
    if confidence in (4, 5):
        return CONFIDENT_MAX_AGE
    if confidence in (2, 3):
        return UNSURE_MAX_AGE
    return None


def is_fresh(answer: Answer, now: datetime, prompt_version: str | None = None) -> bool:
    """True when `answer` may be reused instead of asking again. FAILED answers never are, nor
    answers given under another prompt version than `prompt_version` (when one is given): a
    changed prompt is a new question."""
    if answer.status is not ResultStatus.DONE or answer.answer is None:
        return False
    if prompt_version is not None and answer.prompt_version != prompt_version:
        return False
    limit = max_age(answer.confidence)
    return limit is not None and now - answer.answered_at < limit
