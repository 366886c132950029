"""Defensive parsing of model output: examples for each rule and hypothesis properties."""

import json

import pytest
from hypothesis import given, strategies as st

from firmsift.domain.parsing import ParsedVerdict, ParseFailure, parse_verdict, read_confidence


def ok(answer: bool, confidence: int, reason: str = "r") -> ParsedVerdict:
    return ParsedVerdict(answer=answer, confidence=confidence, reason=reason)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"is_cpg": true, "confidence": 5, "reasoning": "r"}', ok(True, 5)),
        ('```json\n{"is_cpg": false, "confidence": "3", "reasoning": "r"}\n```', ok(False, 3)),
        ('<think>maybe {"is_cpg": false}</think>{"is_cpg": "yes", "confidence": 4, "reasoning": "r"}', ok(True, 4)),
        ('half a thought</think>\n{"is_cpg": "No", "confidence": 2, "reasoning": "r"}', ok(False, 2)),
        ('Sure! {"is_cpg": 1, "confidence": 4.0, "reasoning": "r"} Hope this helps {"x": 1}', ok(True, 4)),
        ('{"is_cpg": "TRUE", "confidence": " 5 ", "reasoning": "r"}', ok(True, 5)),
        ('{"is_cpg": "0", "confidence": 1, "reasoning": "r"}', ok(False, 1)),
        ('{"is_cpg": 0, "confidence": 2, "reasoning": "r"}', ok(False, 2)),
        ('{"answer": true, "confidence": 3, "reason": "r"}', ok(True, 3)),
        ('{"is_cpg": true, "confidence": 3, "reasoning": "two\\n  lines"}', ok(True, 3, "two lines")),
        ('{"is_cpg": true, "confidence": 3}', ok(True, 3, "")),
        ("{bad json} then {\"is_cpg\": false, \"confidence\": 5, \"reasoning\": \"r\"}", ok(False, 5)),
    ],
)
def test_accepted_spellings(raw: str, expected: ParsedVerdict) -> None:
    assert parse_verdict(raw, "is_cpg") == expected


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("", "no JSON object"),
        ("I think it is a CPG company.", "no JSON object"),
        ('{"is_cpg": "maybe", "confidence": 3}', "not clearly true or false"),
        ('{"is_cpg": 2, "confidence": 3}', "not clearly true or false"),
        ('{"is_cpg": null, "confidence": 3}', "not clearly true or false"),
        ('{"confidence": 3}', "not clearly true or false"),
        ('{"is_cpg": true, "confidence": -1}', "confidence"),
        ('{"is_cpg": true, "confidence": 101}', "confidence"),
        ('{"is_cpg": true, "confidence": "120%"}', "confidence"),
        ('{"is_cpg": true, "confidence": "6/5"}', "confidence"),
        ('{"is_cpg": true, "confidence": "4/0"}', "confidence"),
        ('{"is_cpg": true, "confidence": 1e999}', "confidence"),
        ('{"is_cpg": true, "confidence": null}', "confidence"),
        ('{"is_cpg": true, "confidence": true}', "confidence"),
        ('{"is_cpg": true, "confidence": "high"}', "confidence"),
        ("<think>{\"is_cpg\": true, \"confidence\": 5}", "no JSON object"),
        ("[" * 100000, "no JSON object"),
    ],
)
def test_garbage_fails_with_the_raw_output_kept(raw: str, error: str) -> None:
    result = parse_verdict(raw, "is_cpg")
    assert isinstance(result, ParseFailure)
    assert error in result.error
    assert result.raw == raw


@pytest.mark.parametrize(
    ("quote", "read"),
    [
        ('"Makes crisps and dips."', "Makes crisps and dips."),
        ('"  Makes crisps\\n  and   dips. "', "Makes crisps and dips."),  # one line, as stored
        ('""', None),
        ('"  "', None),
        ("null", None),
        ("42", None),
        ('["Makes crisps", "and dips"]', None),  # not text: read as no quote, not as a failure
    ],
)
def test_the_quote_is_read_on_one_line_and_anything_but_text_is_no_quote(quote: str, read: str | None) -> None:
    raw = f'{{"is_cpg": true, "confidence": 4, "reasoning": "r", "quote": {quote}}}'
    assert parse_verdict(raw, "is_cpg") == ParsedVerdict(answer=True, confidence=4, reason="r", quote=read)


def test_an_answer_without_a_quote_is_accepted_and_says_it_has_none() -> None:
    # An older prompt's output, or a small model that dropped the field.
    assert parse_verdict('{"is_cpg": true, "confidence": 5, "reasoning": "r"}', "is_cpg") == ok(True, 5)
    assert ok(True, 5).quote is None


@given(st.text(max_size=300))
def test_any_text_quote_round_trips_whitespace_collapsed(quote: str) -> None:
    raw = json.dumps({"is_cpg": False, "confidence": 2, "reasoning": "r", "quote": quote})
    result = parse_verdict(raw, "is_cpg")
    assert isinstance(result, ParsedVerdict)
    assert result.quote == (" ".join(quote.split()) or None)


@given(st.text(max_size=300), st.sampled_from(["{}", "```json\n{}\n```", "```\n{}```", "  {}\n"]))
def test_a_quote_of_tags_or_fences_survives_in_a_whole_json_answer(quote: str, wrapping: str) -> None:
    # The model quoted a page that shows "<think>" or "```": the quote is text, not markup to cut.
    body = json.dumps({"is_cpg": True, "confidence": 3, "reasoning": "r", "quote": f"```{quote}<think>"})
    result = parse_verdict(wrapping.replace("{}", body), "is_cpg")
    assert isinstance(result, ParsedVerdict)
    assert result.quote == " ".join(f"```{quote}<think>".split())


def test_non_text_is_a_failure() -> None:
    assert isinstance(parse_verdict(None, "is_cpg"), ParseFailure)


@given(st.text())
def test_never_raises_on_any_text(raw: str) -> None:
    result = parse_verdict(raw, "is_cpg")
    assert isinstance(result, (ParsedVerdict, ParseFailure))


TRUE_SPELLINGS = [True, 1, "true", "yes", "1", "True", "YES", " Yes "]
FALSE_SPELLINGS = [False, 0, "false", "no", "0", "False", "NO"]


@given(
    answer=st.sampled_from(TRUE_SPELLINGS + FALSE_SPELLINGS),
    confidence=st.integers(1, 5),
    as_string=st.booleans(),
    fenced=st.booleans(),
    think=st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=30),
    trailing=st.text(max_size=30),
)
def test_every_accepted_spelling_round_trips(answer, confidence, as_string, fenced, think, trailing) -> None:
    body = json.dumps({"is_cpg": answer, "confidence": str(confidence) if as_string else confidence, "reasoning": "x"})
    if fenced:
        body = f"```json\n{body}\n```"
    raw = f"<think>{think}</think>{body}{trailing}"
    result = parse_verdict(raw, "is_cpg")
    assert result == ParsedVerdict(answer=answer in TRUE_SPELLINGS, confidence=confidence, reason="x")


# --- confidence: one rule, p = share of certainty, stored as 1 + 4p rounded half up -----------


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        (0, 1), (0.0, 1), ("0", 1),  # no certainty at all
        (0.8, 4), ("0.8", 4), (0.5, 3), (0.99, 5), (".9", 5),  # a share of certainty
        (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (4.0, 4), ("4.0", 4), (4.5, 5), (2.4, 2),  # the 1-5 scale
        (100, 5), (85, 4), ("85%", 4), ("85 %", 4), (50, 3), (6, 1), ("100%", 5), ("0%", 1),  # percentages
        ("4/5", 4), ("5/5", 5), ("3 / 5", 3), ("8/10", 4), ("0/5", 1),  # fractions
    ],
)
def test_confidence_written_in_any_real_models_way_lands_on_the_scale(written: object, stored: int) -> None:
    assert read_confidence(written) == stored
    raw = json.dumps({"is_cpg": True, "confidence": written, "reasoning": "r"})
    assert parse_verdict(raw, "is_cpg") == ok(True, stored)


@given(st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12)))
def test_a_confidence_is_on_the_scale_or_refused(value: object) -> None:
    assert read_confidence(value) in (None, 1, 2, 3, 4, 5)


@given(st.floats(min_value=0, max_value=100))
def test_every_number_from_0_to_100_is_read_and_the_same_as_text(value: float) -> None:
    assert read_confidence(value) is not None
    assert read_confidence(repr(value)) == read_confidence(value) or "e" in repr(value)


@given(st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not 0 <= v <= 100))
def test_numbers_outside_0_to_100_are_refused(value: float) -> None:
    assert read_confidence(value) is None


@pytest.mark.parametrize(("low", "high"), [(0.0, 0.999999), (1.0, 5.0), (5.000001, 100.0)])
@given(data=st.data())
def test_within_each_way_of_writing_it_more_certain_is_never_less_confident(low: float, high: float, data) -> None:
    a = data.draw(st.floats(min_value=low, max_value=high))
    b = data.draw(st.floats(min_value=a, max_value=high))
    assert read_confidence(a) <= read_confidence(b)


@given(st.integers(1, 5))
def test_the_1_to_5_scale_is_kept_as_written(value: int) -> None:
    assert read_confidence(value) == read_confidence(float(value)) == read_confidence(str(value)) == value


@given(part=st.integers(0, 100), whole=st.integers(1, 100))
def test_a_fraction_and_its_percentage_agree(part: int, whole: int) -> None:
    if part <= whole:
        assert read_confidence(f"{part}/{whole}") == read_confidence(f"{100 * part / whole}%")
    else:
        assert read_confidence(f"{part}/{whole}") is None
