"""Cache freshness boundaries: 60 days at confidence 4-5, 30 at 2-3, never below 2, never FAILED,
and 30 days at most for an answer whose quote was not verified."""

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from firmsift.domain.freshness import is_fresh
from firmsift.domain.model import Answer, QuoteStatus, ResultStatus, Source

NOW = datetime(2026, 11, 29, tzinfo=timezone.utc)


def answer(confidence: int | None, age: timedelta, status: ResultStatus = ResultStatus.DONE) -> Answer:
    return Answer(domain="a.com", classifier="cpg", status=status, answered_at=NOW - age, source=Source.LLM,
                  answer=None if status is ResultStatus.FAILED else True, confidence=confidence)


@pytest.mark.parametrize("confidence", [4, 5])
def test_confident_answers_last_60_days(confidence: int) -> None:
    assert is_fresh(answer(confidence, timedelta(days=60) - timedelta(seconds=1)), NOW)
    assert not is_fresh(answer(confidence, timedelta(days=60)), NOW)


@pytest.mark.parametrize("confidence", [2, 3])
def test_unsure_answers_last_30_days(confidence: int) -> None:
    assert is_fresh(answer(confidence, timedelta(days=30) - timedelta(seconds=1)), NOW)
    assert not is_fresh(answer(confidence, timedelta(days=30)), NOW)


@pytest.mark.parametrize("confidence", [1, None, 0, 6])
def test_guesses_are_never_reused(confidence: int | None) -> None:
    assert not is_fresh(answer(confidence, timedelta(0)), NOW)


def test_failed_answers_are_never_reused() -> None:
    assert not is_fresh(answer(5, timedelta(0), ResultStatus.FAILED), NOW)


def test_an_answer_to_another_prompt_version_is_stale() -> None:
    given = answer(5, timedelta(0))
    assert is_fresh(given, NOW)
    assert not is_fresh(given, NOW, prompt_version="cpg-v2")
    assert is_fresh(replace(given, prompt_version="cpg-v2"), NOW, prompt_version="cpg-v2")


@pytest.mark.parametrize("status", [QuoteStatus.UNVERIFIED, QuoteStatus.NO_QUOTE, QuoteStatus.NO_EVIDENCE])
def test_an_answer_without_a_verified_quote_lasts_30_days_at_most_whatever_its_confidence(status) -> None:
    given = replace(answer(5, timedelta(days=30) - timedelta(seconds=1)), quote_status=status)
    assert is_fresh(given, NOW)
    assert not is_fresh(replace(given, answered_at=NOW - timedelta(days=30)), NOW)
    assert not is_fresh(replace(given, confidence=1), NOW)


@pytest.mark.parametrize("status", [QuoteStatus.VERIFIED, None])  # None: stored before quotes were checked
def test_a_verified_quote_or_none_checked_leaves_the_confidence_rule_alone(status) -> None:
    given = replace(answer(5, timedelta(days=60) - timedelta(seconds=1)), quote_status=status)
    assert is_fresh(given, NOW)
    assert not is_fresh(replace(given, answered_at=NOW - timedelta(days=60)), NOW)
