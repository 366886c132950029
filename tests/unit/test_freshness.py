"""Cache freshness boundaries: 60 days at confidence 4-5, 30 at 2-3, never below 2, never FAILED."""

from datetime import datetime, timedelta, timezone

import pytest

from firmsift.domain.freshness import is_fresh
from firmsift.domain.model import Answer, ResultStatus, Source

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
    from dataclasses import replace

    assert is_fresh(replace(given, prompt_version="cpg-v2"), NOW, prompt_version="cpg-v2")
