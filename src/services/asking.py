"""One question to the LLM about one domain: the prompt, the call and the defensive parse.

The worker (process.py) and the evaluation harness both ask through here, so an evaluation
scores exactly the path that answers real jobs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.economy import Question
from firmsift.domain.excerpts import excerpt
from firmsift.domain.model import Answer, Classifier, Completion, Evidence, ResultStatus, Source
from firmsift.domain.outside_text import storable, storable_completion, storable_error, storable_evidence
from firmsift.domain.parsing import ParseFailure, parse_verdict
from firmsift.domain.prompt import answer_schema, build_prompt, evidence_sent
from firmsift.domain.quotes import MAX_QUOTE_CHARS, check_quote, trusted_confidence
from firmsift.ports.infrastructure_errors import DatabaseFailure

if TYPE_CHECKING:
    from firmsift.ports.providers import LLM, Pricing

RAW_START_LENGTH = 160  # how much of an unreadable answer its error quotes (all of it is kept in raw_output)


async def ask_llm(
    domain: str,
    classifier: Classifier,
    evidence: list[Evidence],
    llm: LLM,
    *,
    pricing: Pricing,
    slots: asyncio.Semaphore,
    marker: str,
    now: Callable[[], datetime],
) -> tuple[Answer, Completion | None]:
    """(the answer, the completion it was read from, or None when the call failed).

    Never raises for a provider failure or unreadable output: the answer is FAILED with the
    reason, so one domain's failure stays that domain's. A database failure (of the pacing the
    workers share) is raised: the domain is not answered. `slots` caps concurrent LLM calls.
    Evidence, the completion and error messages come from outside: they are made storable
    here, so a poison character cannot make the answer unsavable (and paid for again).
    The answer's quote is checked against the evidence text the prompt carried: without a
    verified quote the answer keeps at most confidence 2 (quotes.py).

    The answer records what the call was billed: the tokens the provider reported (for an
    answer it returned but that could not be used too) and their price by `pricing`, for the
    configured model (`llm.model`); None where unknown. A call that failed without a response
    has no figures: whether it was billed is unknown. It also records how long the call held
    its slot (`llm_seconds`, what the dry run's wall time rests on), failed calls included.
    """
    question, evidence = ask_about(domain, classifier, evidence, marker)
    started = None
    try:
        async with slots:
            started = time.monotonic()  # the slot is taken: waiting for it is not the call's time
            completion = await llm.complete(question.system, question.user, json_schema=question.json_schema)
    except DatabaseFailure:
        # The database the LLM's pacing is shared through failed (before the call went out): not
        # this domain's answer. It stays unfinished, for the job's next delivery to ask.
        raise
    except Exception as error:  # noqa: BLE001 - failure isolation: this domain fails, the job goes on
        failed = replace(unanswered(domain, classifier, evidence, now()), status=ResultStatus.FAILED,
                         error=f"LLM call failed: {storable_error(error)}", model=llm.model,
                         llm_seconds=_seconds_since(started))
        return billed(failed, pricing, llm.model, getattr(error, "prompt_tokens", None),
                      getattr(error, "completion_tokens", None)), None
    took = _seconds_since(started)
    completion = storable_completion(completion)
    answer = read_answer(replace(unanswered(domain, classifier, evidence, now()), llm_seconds=took), question,
                         completion, classifier, pricing=pricing, priced_as=llm.model)
    return answer, completion


def _seconds_since(started: float | None) -> float | None:
    """Seconds since `started` (time.monotonic), to the millisecond; None when the call never started."""
    return None if started is None else round(time.monotonic() - started, 3)


def unanswered(domain: str, classifier: Classifier, evidence: list[Evidence], at: datetime) -> Answer:
    """The LLM's answer for `domain` as known before the model answers (PENDING): what it was asked with."""
    return Answer(domain=domain, classifier=classifier.name, answered_at=at, source=Source.LLM,
                  evidence=tuple(evidence), prompt_version=classifier.prompt_version, status=ResultStatus.PENDING)


def ask_about(domain: str, classifier: Classifier, evidence: list[Evidence],
              marker: str) -> tuple[Question, list[Evidence]]:
    """The question for `domain` and the evidence it carries, made storable (it comes from outside)."""
    evidence = storable_evidence(evidence)
    system, user = build_prompt(classifier, domain, evidence, marker)
    return Question(system, user, answer_schema(classifier), marker), evidence


def billed(answer: Answer, pricing: Pricing, model: str, prompt_tokens: int | None,
           completion_tokens: int | None) -> Answer:
    """`answer` with the tokens its call was billed and their price by `pricing` for `model`."""
    return replace(answer, tokens_in=prompt_tokens, tokens_out=completion_tokens,
                   cost_usd=pricing.cost(model, prompt_tokens, completion_tokens))


def with_spend_of(answer: Answer, earlier: list[Answer]) -> Answer:
    """`answer` billed for the `earlier` attempts too (answers that could not be read, asked
    again): their tokens are added, and the cost stays known only while every attempt's is."""
    if not earlier:
        return answer
    attempts = [*earlier, answer]

    def total(values: list[int | None]) -> int | None:
        known = [value for value in values if value is not None]
        return sum(known) if known else None

    costs = [attempt.cost_usd for attempt in attempts]
    return replace(answer, tokens_in=total([a.tokens_in for a in attempts]),
                   tokens_out=total([a.tokens_out for a in attempts]),
                   cost_usd=None if None in costs else sum(cost for cost in costs if cost is not None))


def unreadable(answer: Answer) -> bool:
    """The model answered, but not in a form that could be read (its output is kept)."""
    return answer.status is ResultStatus.FAILED and answer.raw_output is not None


def read_answer(template: Answer, question: Question, completion: Completion, classifier: Classifier, *,
                pricing: Pricing, priced_as: str) -> Answer:
    """The answer `completion` gives to `question`, read into `template` (the answer as known
    before asking: its domain, evidence and time); priced by `pricing` as a call to `priced_as`.
    Output that cannot be read makes a FAILED answer that keeps the raw text and the cost."""
    completion = storable_completion(completion)
    verdict = parse_verdict(completion.text, classifier.answer_field)
    if isinstance(verdict, ParseFailure):
        began = excerpt(verdict.raw, RAW_START_LENGTH) or "(nothing)"
        answer = replace(template, status=ResultStatus.FAILED, raw_output=verdict.raw, model=completion.model,
                         error=f"unreadable model output: {verdict.error}; it began: {began}")
        return billed(answer, pricing, priced_as, completion.prompt_tokens, completion.completion_tokens)
    quoted = check_quote(verdict.quote, evidence_sent(list(template.evidence), question.marker))
    answer = replace(template, status=ResultStatus.DONE, answer=verdict.answer,
                     confidence=trusted_confidence(verdict.confidence, quoted),
                     # JSON escapes (\u0000, \ud800) decode to what the clean raw text did not hold.
                     reason=storable(verdict.reason), raw_output=completion.text, model=completion.model,
                     quote=storable(excerpt(verdict.quote, MAX_QUOTE_CHARS)) if verdict.quote else None,
                     quote_status=quoted)
    return billed(answer, pricing, priced_as, completion.prompt_tokens, completion.completion_tokens)
