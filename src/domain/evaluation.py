"""Evaluation on labelled domains: the evidence and completions a run records and reuses, and what
one candidate answered (the scores computed from it are in evaluation_scores.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from firmsift.domain.model import Evidence, QuoteStatus

@dataclass(frozen=True)
class LabelledDomain:
    """One row of a labels file: the truth a candidate is scored against."""

    domain: str
    label: bool
    notes: str = ""


@dataclass(frozen=True)
class GatheredEvidence:
    """One search provider's evidence for one domain, and how long it took to gather.
    A failed search is kept too (no evidence, with its error): the worker asks without evidence
    then, and so does the evaluation."""

    evidence: tuple[Evidence, ...]
    seconds: float
    error: str | None = None


@dataclass(frozen=True)
class CachedCompletion:
    text: str
    model: str
    seconds: float  # how long the call took when it was paid for
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class OutcomeKind(str, enum.Enum):
    ANSWERED = "answered"
    UNPARSEABLE = "unparseable"  # the model answered, but not in a form we can read
    FAILED = "failed"  # no answer: transport error, timeout, refusal, cut-off
    ENDED = "ended"  # the pre-check ended the domain (no_dns, unreachable, parked): no LLM call, not scored


@dataclass(frozen=True)
class Outcome:
    """What one candidate made of one labelled domain.

    Latencies are those measured when the answer was first obtained: a replayed snapshot keeps
    its search time and a cached completion its LLM time, so reruns report the same figures.
    """

    domain: str
    label: bool
    kind: OutcomeKind
    answer: bool | None = None
    confidence: int | None = None
    reason: str = ""
    error: str | None = None
    source: str = "llm"  # "llm", "known_company" or "precheck"
    site_status: str | None = None  # the pre-check's status for the domain; None: not pre-checked
    search_seconds: float = 0.0
    search_error: str | None = None  # the search failed: the model was asked without evidence
    llm_seconds: float | None = None  # None when no LLM call was made (known company)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None: the model's price is unknown
    from_cache: bool = False  # the completion came from the LLM response cache: no call was paid for
    raw_output: str | None = None  # what the model wrote, kept for unparseable answers
    quote: str | None = None  # the model's quote from the evidence
    quote_status: QuoteStatus | None = None  # None where no LLM answered

    @property
    def domain_seconds(self) -> float:
        return self.search_seconds + (self.llm_seconds or 0.0)

    @property
    def correct(self) -> bool:
        return self.kind is OutcomeKind.ANSWERED and self.answer == self.label

    @property
    def verdict(self) -> str:
        """yes / no, or the outcome kind when there is no answer: what a disagreement table shows."""
        if self.kind is OutcomeKind.ANSWERED:
            return "yes" if self.answer else "no"
        return self.kind.value
