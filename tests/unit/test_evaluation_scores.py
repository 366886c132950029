"""Evaluation scores: one labelled set computed by hand, and properties of the figures."""

import math

from hypothesis import given, strategies as st

from firmsift.domain.evaluation import LabelledDomain, Outcome, OutcomeKind
from firmsift.domain.evaluation_scores import disagreements, percentile, score
from firmsift.domain.model import QuoteStatus

A, U, F = OutcomeKind.ANSWERED, OutcomeKind.UNPARSEABLE, OutcomeKind.FAILED


def answered(domain: str, label: bool, answer: bool, confidence: int, llm: float, **extra: object) -> Outcome:
    fields = {"search_seconds": 0.5, "prompt_tokens": 100, "completion_tokens": 10, "cost_usd": 0.001} | extra
    return Outcome(domain, label, A, answer=answer, confidence=confidence, llm_seconds=llm, **fields)  # type: ignore[arg-type]


# Ten labelled domains, worked out by hand below.
OUTCOMES = [
    answered("a.com", True, True, 5, 1.0),  # TP
    answered("b.com", True, True, 4, 2.0),  # TP
    answered("c.com", True, False, 2, 3.0),  # FN
    Outcome("d.com", True, F, error="timed out", llm_seconds=9.0, search_seconds=0.5),  # failed
    answered("e.com", False, False, 5, 4.0, from_cache=True),  # TN
    answered("f.com", False, True, 3, 5.0),  # FP
    answered("g.com", False, False, 4, 6.0),  # TN
    Outcome("h.com", False, U, error="unreadable", llm_seconds=7.0, search_seconds=0.5, prompt_tokens=100,
            completion_tokens=10, cost_usd=0.001),  # unparseable (paid for)
    Outcome("i.com", True, A, answer=True, confidence=5, source="known_company"),  # TP, no call
    answered("j.com", False, False, 2, 8.0),  # TN
]


def test_a_labelled_set_scored_by_hand() -> None:
    figures = score(OUTCOMES)
    assert figures.total == 10
    assert figures.correct == 6  # a b e g i j
    assert figures.accuracy == 0.6  # unanswered d and h count as wrong
    assert (figures.true_positives, figures.false_positives, figures.true_negatives, figures.false_negatives) \
        == (3, 1, 3, 1)
    assert figures.false_negative_domains == ("c.com",)
    assert figures.false_positive_domains == ("f.com",)
    assert figures.unparseable_domains == ("h.com",)
    assert figures.failed_domains == ("d.com",)
    assert figures.precision == 0.75  # 3 of the 4 yes answers
    assert figures.recall == 0.6  # 3 of the 5 labelled yes: d.com, unanswered, was not found either
    assert figures.f1 == 2 * 3 / (2 * 3 + 1 + 2)  # 2TP / (2TP + FP + missed yes) = harmonic mean of .75 and .6
    calibration = {level.confidence: (level.answered, level.correct, level.accuracy) for level in figures.by_confidence}
    assert calibration == {5: (3, 3, 1.0), 4: (2, 2, 1.0), 3: (1, 0, 0.0), 2: (2, 1, 0.5), 1: (0, 0, None)}
    # LLM seconds of the 9 domains asked: 1 2 3 9 4 5 6 7 8 -> sorted 1..9; nearest rank ceil(.5*9)=5, ceil(.95*9)=9
    assert (figures.llm_seconds_p50, figures.llm_seconds_p95) == (5.0, 9.0)
    # Domain seconds: each asked domain +0.5 search, i.com 0 -> 0, 1.5 .. 9.5; ranks ceil(5)=5, ceil(9.5)=10
    assert (figures.domain_seconds_p50, figures.domain_seconds_p95) == (4.5, 9.5)
    # Completions obtained: 7 answered by the LLM + 1 unparseable; the failed call and the known company cost nothing.
    assert (figures.llm_calls, figures.cached_completions) == (8, 1)
    assert (figures.prompt_tokens, figures.completion_tokens) == (800, 80)
    assert math.isclose(figures.cost_usd or 0, 0.008)


def test_cost_is_unknown_when_any_answer_has_no_price_and_ratios_without_denominator_are_none() -> None:
    unpriced = [answered("a.com", False, False, 3, 1.0, cost_usd=None), answered("b.com", False, False, 3, 1.0)]
    figures = score(unpriced)
    assert figures.cost_usd is None
    assert figures.precision is None and figures.recall is None and figures.f1 is None
    assert score([]).accuracy is None and score([]).llm_seconds_p50 is None


def test_a_candidate_that_finds_nothing_scores_f1_zero_not_nothing() -> None:
    figures = score([answered("a.com", True, False, 3, 1.0), answered("b.com", False, False, 3, 1.0)])
    assert (figures.precision, figures.recall, figures.f1) == (None, 0.0, 0.0)
    failing = score([Outcome(f"{n}.com", True, F, error="down") for n in "abcdefghi"]
                    + [answered("j.com", True, True, 5, 1.0)])
    assert (failing.accuracy, failing.precision, failing.recall) == (0.1, 1.0, 0.1)  # failures are misses


def test_search_failures_are_counted_apart() -> None:
    figures = score([answered("a.com", True, True, 3, 1.0, search_error="timed out"), answered("b.com", True, True, 3, 1.0)])
    assert figures.search_failed_domains == ("a.com",)


def test_the_share_of_verified_quotes_counts_the_llms_answers_only() -> None:
    figures = score([
        answered("a.com", True, True, 5, 1.0, quote_status=QuoteStatus.VERIFIED),
        answered("b.com", True, True, 2, 1.0, quote_status=QuoteStatus.UNVERIFIED),
        answered("c.com", False, True, 2, 1.0, quote_status=QuoteStatus.NO_QUOTE),
        answered("d.com", False, False, 4, 1.0, quote_status=QuoteStatus.VERIFIED),
        Outcome("e.com", True, A, answer=True, confidence=5, source="known_company"),  # nothing to quote
        Outcome("f.com", True, F, error="down"),
        Outcome("g.com", True, U, error="unreadable"),
    ])
    assert dict(figures.quote_statuses) == {QuoteStatus.VERIFIED: 2, QuoteStatus.UNVERIFIED: 1,
                                            QuoteStatus.NO_QUOTE: 1, QuoteStatus.NO_EVIDENCE: 0}
    assert figures.verified_share == 0.5
    assert score(OUTCOMES[8:9]).verified_share is None  # a known company alone: no LLM answer to count


def test_disagreements_list_domains_where_verdicts_differ_in_label_order() -> None:
    labels = [LabelledDomain("a.com", True), LabelledDomain("b.com", False, "retailer"), LabelledDomain("c.com", True)]
    first = {o.domain: o for o in [answered("a.com", True, True, 5, 1), answered("b.com", False, True, 2, 1),
                                   answered("c.com", True, True, 4, 1)]}
    second = {o.domain: o for o in [answered("a.com", True, True, 3, 1), answered("b.com", False, False, 4, 1),
                                    Outcome("c.com", True, F, error="x")]}
    rows = disagreements(labels, {"one": first, "two": second})
    assert [row.domain for row in rows] == ["b.com", "c.com"]  # a.com: both yes, confidence aside
    assert rows[0].notes == "retailer"
    assert rows[0].verdicts == (("one", "yes", 2), ("two", "no", 4))
    assert rows[1].verdicts == (("one", "yes", 4), ("two", "failed", None))


@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1),
       st.floats(min_value=0, max_value=100), st.floats(min_value=0, max_value=100))
def test_percentile_is_a_sample_value_and_grows_with_p(values: list[float], p: float, q: float) -> None:
    low, high = sorted((p, q))
    assert percentile(values, low) in values
    assert percentile(values, low) <= percentile(values, high)  # type: ignore[operator]
    assert percentile(values, 100) == max(values) and percentile(values, 0) == min(values)


outcome_kinds = st.sampled_from([A, U, F])


@given(st.lists(st.tuples(st.booleans(), outcome_kinds, st.booleans(), st.integers(1, 5)), max_size=60))
def test_every_domain_lands_in_exactly_one_cell(rows: list[tuple[bool, OutcomeKind, bool, int]]) -> None:
    outcomes = [Outcome(f"d{i}.com", label, kind, answer=answer if kind is A else None,
                        confidence=confidence if kind is A else None, llm_seconds=1.0)
                for i, (label, kind, answer, confidence) in enumerate(rows)]
    figures = score(outcomes)
    cells = (figures.true_positives + figures.false_positives + figures.true_negatives + figures.false_negatives
             + len(figures.unparseable_domains) + len(figures.failed_domains))
    assert cells == figures.total == len(rows)
    assert figures.correct == figures.true_positives + figures.true_negatives
    assert sum(level.answered for level in figures.by_confidence) == sum(kind is A for _, kind, _, _ in rows)
    for value in (figures.precision, figures.recall, figures.f1, figures.accuracy):
        assert value is None or 0 <= value <= 1
