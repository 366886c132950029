"""The scores of an evaluation: one candidate's figures over a labels file (accuracy, the confusion
matrix, calibration by confidence, latency percentiles, tokens and cost), and where candidates disagree."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from firmsift.domain.evaluation import LabelledDomain, Outcome, OutcomeKind
from firmsift.domain.model import QuoteStatus

CONFIDENCE_LEVELS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class ConfidenceLevel:
    """Answers given at one confidence level and how many were right: is confidence calibrated?"""

    confidence: int
    answered: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answered if self.answered else None


@dataclass(frozen=True)
class Score:
    """One candidate's figures over a labels file.

    Domains the pre-check ended (no_dns, unreachable, parked) are no answer of the model: they
    are left out of every figure below and listed apart (`ended_domains`); those labelled yes are
    `precheck_misses`, a CPG company the pre-check wrote off. `total` and `labelled_yes` count the
    domains scored. accuracy counts every scored domain, so an unanswered domain is a wrong one. The confusion
    matrix and precision count answered domains (unanswered ones are listed apart); recall counts
    every domain labelled yes, so a CPG company left unanswered is a company not found; F1 is
    the harmonic mean of those two. Percentiles are nearest-rank: the value at rank
    ceil(p/100 * n) of the sorted latencies.
    """

    total: int
    labelled_yes: int
    correct: int
    true_positives: int
    false_positives: int
    true_negatives: int
    false_negatives: int
    false_negative_domains: tuple[str, ...]
    false_positive_domains: tuple[str, ...]
    unparseable_domains: tuple[str, ...]
    failed_domains: tuple[str, ...]
    search_failed_domains: tuple[str, ...]  # asked without evidence because the search failed
    ended_domains: tuple[str, ...]  # ended by the pre-check: not scored
    precheck_misses: tuple[str, ...]  # of those, the ones labelled yes
    by_confidence: tuple[ConfidenceLevel, ...]
    domain_seconds_p50: float | None
    domain_seconds_p95: float | None
    llm_seconds_p50: float | None
    llm_seconds_p95: float | None
    llm_calls: int  # completions obtained (paid for now or when first cached)
    cached_completions: int  # of those, served from the cache in this run
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None when any answered call's model has no known price
    quote_statuses: tuple[tuple[QuoteStatus, int], ...]  # the LLM's answers by quote status, every status listed

    @property
    def verified_share(self) -> float | None:
        """The share of the LLM's answers whose quote was found in their evidence (None: no such answers)."""
        counts = dict(self.quote_statuses)
        return _ratio(counts[QuoteStatus.VERIFIED], sum(counts.values()))

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.total if self.total else None

    @property
    def precision(self) -> float | None:
        return _ratio(self.true_positives, self.true_positives + self.false_positives)

    @property
    def recall(self) -> float | None:
        return _ratio(self.true_positives, self.labelled_yes)

    @property
    def f1(self) -> float | None:
        """2TP / (2TP + FP + missed yes): the harmonic mean of precision and recall where both
        exist, 0 when nothing labelled yes was found, None when there was nothing to find or say."""
        missed = self.labelled_yes - self.true_positives
        return _ratio(2 * self.true_positives, 2 * self.true_positives + self.false_positives + missed)


def score(outcomes: Sequence[Outcome]) -> Score:
    """The figures for one candidate's outcomes (one per labelled domain)."""
    ended = [o for o in outcomes if o.kind is OutcomeKind.ENDED]
    outcomes = [o for o in outcomes if o.kind is not OutcomeKind.ENDED]
    answered = [o for o in outcomes if o.kind is OutcomeKind.ANSWERED]

    def domains(pick: bool, label: bool) -> tuple[str, ...]:
        return tuple(sorted(o.domain for o in answered if o.answer is pick and o.label is label))

    false_negatives, false_positives = domains(False, True), domains(True, False)
    levels = tuple(
        ConfidenceLevel(level, sum(o.confidence == level for o in answered),
                        sum(o.confidence == level and o.correct for o in answered))
        for level in CONFIDENCE_LEVELS
    )
    asked = [o for o in outcomes if o.llm_seconds is not None]
    checked = [o.quote_status for o in answered if o.quote_status is not None]
    completed = [o for o in outcomes if o.kind is not OutcomeKind.FAILED and o.source == "llm"]
    costs = [o.cost_usd for o in completed]
    return Score(
        total=len(outcomes),
        labelled_yes=sum(o.label for o in outcomes),
        correct=sum(o.correct for o in outcomes),
        true_positives=len(domains(True, True)),
        false_positives=len(false_positives),
        true_negatives=len(domains(False, False)),
        false_negatives=len(false_negatives),
        false_negative_domains=false_negatives,
        false_positive_domains=false_positives,
        unparseable_domains=tuple(sorted(o.domain for o in outcomes if o.kind is OutcomeKind.UNPARSEABLE)),
        failed_domains=tuple(sorted(o.domain for o in outcomes if o.kind is OutcomeKind.FAILED)),
        search_failed_domains=tuple(sorted(o.domain for o in outcomes if o.search_error is not None)),
        ended_domains=tuple(sorted(o.domain for o in ended)),
        precheck_misses=tuple(sorted(o.domain for o in ended if o.label)),
        by_confidence=levels,
        domain_seconds_p50=percentile([o.domain_seconds for o in outcomes], 50),
        domain_seconds_p95=percentile([o.domain_seconds for o in outcomes], 95),
        llm_seconds_p50=percentile([o.llm_seconds for o in asked if o.llm_seconds is not None], 50),
        llm_seconds_p95=percentile([o.llm_seconds for o in asked if o.llm_seconds is not None], 95),
        llm_calls=len(completed),
        cached_completions=sum(o.from_cache for o in completed),
        prompt_tokens=sum(o.prompt_tokens for o in completed),
        completion_tokens=sum(o.completion_tokens for o in completed),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
        quote_statuses=tuple((status, checked.count(status)) for status in QuoteStatus),
    )


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (no interpolation, so a hand computation gives the same figure)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Disagreement:
    """A labelled domain on which the candidates did not all give the same verdict."""

    domain: str
    label: bool
    notes: str
    verdicts: tuple[tuple[str, str, int | None], ...]  # (candidate, verdict, confidence)


def disagreements(labels: Sequence[LabelledDomain],
                  outcomes: Mapping[str, Mapping[str, Outcome]]) -> tuple[Disagreement, ...]:
    """Domains where candidates differ (an unanswered domain differs from any answer), in label order.
    `outcomes` maps candidate name -> domain -> outcome."""
    rows: list[Disagreement] = []
    for item in labels:
        verdicts = tuple((name, by_domain[item.domain].verdict, by_domain[item.domain].confidence)
                         for name, by_domain in outcomes.items() if item.domain in by_domain)
        if len({verdict for _, verdict, _ in verdicts}) > 1:
            rows.append(Disagreement(item.domain, item.label, item.notes, verdicts))
    return tuple(rows)


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None
