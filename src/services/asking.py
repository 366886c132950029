"""One question to the LLM about one domain: the prompt, the call and the defensive parse.

The worker (process.py) and the evaluation harness both ask through here, so an evaluation
scores exactly the path that answers real jobs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.excerpts import excerpt
from firmsift.domain.model import Answer, Classifier, Completion, Evidence, ResultStatus, Source
from firmsift.domain.outside_text import storable, storable_completion, storable_error, storable_evidence
from firmsift.domain.parsing import ParseFailure, parse_verdict
from firmsift.domain.prompt import answer_schema, build_prompt, evidence_sent
from firmsift.domain.quotes import MAX_QUOTE_CHARS, check_quote, trusted_confidence

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
    reason, so one domain's failure stays that domain's. `slots` caps concurrent LLM calls.
    Evidence, the completion and error messages come from outside: they are made storable
    here, so a poison character cannot make the answer unsavable (and paid for again).
    The answer's quote is checked against the evidence text the prompt carried: without a
    verified quote the answer keeps at most confidence 2 (quotes.py).

    The answer records what the call was billed: the tokens the provider reported (for an
    answer it returned but that could not be used too) and their price by `pricing`, for the
    configured model (`llm.model`); None where unknown. A call that failed without a response
    has no figures: whether it was billed is unknown.
    """
    evidence = storable_evidence(evidence)
    system, user = build_prompt(classifier, domain, evidence, marker)

    def answer(**outcome: object) -> Answer:
        return Answer(domain=domain, classifier=classifier.name, answered_at=now(), source=Source.LLM,
                      evidence=tuple(evidence), prompt_version=classifier.prompt_version, **outcome)  # type: ignore[arg-type]

    def billed(prompt_tokens: int | None, completion_tokens: int | None) -> dict[str, object]:
        return {"tokens_in": prompt_tokens, "tokens_out": completion_tokens,
                "cost_usd": pricing.cost(llm.model, prompt_tokens, completion_tokens)}

    try:
        async with slots:
            completion = storable_completion(await llm.complete(system, user, json_schema=answer_schema(classifier)))
    except Exception as error:  # noqa: BLE001 - failure isolation: this domain fails, the job goes on
        return answer(status=ResultStatus.FAILED, error=f"LLM call failed: {storable_error(error)}", model=llm.model,
                      **billed(getattr(error, "prompt_tokens", None), getattr(error, "completion_tokens", None))), None
    cost = billed(completion.prompt_tokens, completion.completion_tokens)
    verdict = parse_verdict(completion.text, classifier.answer_field)
    if isinstance(verdict, ParseFailure):
        began = excerpt(verdict.raw, RAW_START_LENGTH) or "(nothing)"
        return answer(status=ResultStatus.FAILED, error=f"unreadable model output: {verdict.error}; it began: {began}",
                      raw_output=verdict.raw, model=completion.model, **cost), completion
    quoted = check_quote(verdict.quote, evidence_sent(evidence, marker))
    return answer(status=ResultStatus.DONE, answer=verdict.answer, **cost,
                  confidence=trusted_confidence(verdict.confidence, quoted),
                  # JSON escapes (\u0000, \ud800) decode to what the clean raw text did not hold.
                  reason=storable(verdict.reason), raw_output=completion.text, model=completion.model,
                  quote=storable(excerpt(verdict.quote, MAX_QUOTE_CHARS)) if verdict.quote else None,
                  quote_status=quoted), completion
