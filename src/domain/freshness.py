"""Cache freshness: how long a stored answer may be reused, by its confidence and its quote."""

from __future__ import annotations

from datetime import datetime, timedelta

from firmsift.domain.model import Answer, QuoteStatus, ResultStatus, Source

CONFIDENT_MAX_AGE = timedelta(days=60)  # confidence 4-5: confident answers save money
UNSURE_MAX_AGE = timedelta(days=30)  # confidence 2-3: uncertain ones get checked sooner
# An answer whose quote was not found in its evidence (or that gave none) rests on nothing we
# could check: never longer than an unsure one, whatever its confidence says.
UNVERIFIED_MAX_AGE = UNSURE_MAX_AGE
# A pre-check outcome (no DNS, unreachable, parked) may change sooner than a company's trade:
# it is looked at again after a week by default (FIRMSIFT_PRECHECK_TTL_DAYS).
PRECHECK_MAX_AGE = timedelta(days=7)


def max_age(confidence: int | None, quote_status: QuoteStatus | None = None) -> timedelta | None:
    """How long an answer of this confidence and quote status may be reused; None means never.
    A quote status of None (no LLM answer, or one stored before quotes were checked) sets no limit."""
    if confidence in (4, 5):
        limit = CONFIDENT_MAX_AGE
    elif confidence in (2, 3):
        limit = UNSURE_MAX_AGE
    else:
        return None
    if quote_status is not None and quote_status is not QuoteStatus.VERIFIED:
        return min(limit, UNVERIFIED_MAX_AGE)
    return limit


def is_fresh(answer: Answer, now: datetime, prompt_version: str | None = None, *,
             precheck_max_age: timedelta | None = PRECHECK_MAX_AGE) -> bool:
    """True when `answer` may be reused instead of asking again. FAILED answers never are, nor
    answers given under another prompt version than `prompt_version` (when one is given): a
    changed prompt is a new question. A pre-check outcome (no answer, no prompt) is reused for
    `precheck_max_age`, and never while the pre-check is off (None): turning it off is how a user
    says its outcomes are not to be believed."""
    if answer.source is Source.PRECHECK:
        return (precheck_max_age is not None and answer.status is ResultStatus.DONE
                and now - answer.answered_at < precheck_max_age)
    if answer.status is not ResultStatus.DONE or answer.answer is None:
        return False
    if prompt_version is not None and answer.prompt_version != prompt_version:
        return False
    limit = max_age(answer.confidence, answer.quote_status)
    return limit is not None and now - answer.answered_at < limit
