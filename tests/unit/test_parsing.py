"""Defensive parsing of model output: examples for each rule and hypothesis properties."""

import json

import pytest
from hypothesis import given, strategies as st

from firmsift.domain.parsing import ParsedVerdict, ParseFailure, parse_verdict


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
        ('{"is_cpg": true, "confidence": 0}', "confidence"),
        ('{"is_cpg": true, "confidence": 6}', "confidence"),
        ('{"is_cpg": true, "confidence": 4.5}', "confidence"),
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
