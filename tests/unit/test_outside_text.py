"""Outside text made storable: what no database can hold is replaced, everything else kept."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.domain.model import Completion, DomainResult, Evidence
from firmsift.domain.outside_text import (
    UnstorableText,
    check_storable,
    storable,
    storable_completion,
    storable_evidence,
    unstorable_reason,
)

# Every code point, lone surrogates and NUL included (Python strings may hold them all).
any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF))


@given(any_text)
def test_storable_text_has_utf8_form_and_no_nul(text: str) -> None:
    clean = storable(text)
    clean.encode("utf-8")
    assert "\x00" not in clean
    assert unstorable_reason(clean) is None
    assert storable(clean) == clean


@given(any_text)
def test_text_that_can_be_stored_is_unchanged(text: str) -> None:
    assert (storable(text) == text) == (unstorable_reason(text) is None)


@pytest.mark.parametrize(("given_text", "expected"), [
    ("a\ud800b", "a\ufffdb"),  # a lone high surrogate
    ("\udfffend", "\ufffdend"),  # a lone low surrogate
    ("\ud83d\ude00", "\N{GRINNING FACE}"),  # a well-formed pair, as two code points: joined
    ("\ude00\ud83d", "\ufffd\ufffd"),  # the same halves the wrong way round
    ("nul\x00here", "nul\ufffdhere"),
    ("tab\tnew\nline — ü 中", "tab\tnew\nline — ü 中"),
])
def test_examples(given_text: str, expected: str) -> None:
    assert storable(given_text) == expected


def test_completion_and_evidence_are_cleaned_field_by_field() -> None:
    completion = storable_completion(Completion(text='{"x": "\ud800"}\x00', model="m\x00", finish_reason="stop"))
    assert (completion.text, completion.model, completion.finish_reason) == ('{"x": "\ufffd"}\ufffd', "m\ufffd", "stop")
    [evidence] = storable_evidence([Evidence("https://a.com/\ud800", "T\x00", "s\udc80")])
    assert evidence == Evidence("https://a.com/\ufffd", "T\ufffd", "s\ufffd")


def test_the_store_check_names_the_field_and_domain() -> None:
    check_storable(DomainResult("a.com", reason="fine — ok"), None)
    with pytest.raises(UnstorableText, match="evidence title of a.com holds a NUL"):
        check_storable(DomainResult("a.com", evidence=(Evidence("https://a.com", "x\x00"),)), None)
    with pytest.raises(UnstorableText, match="reason of a.com holds an unpaired surrogate"):
        check_storable(DomainResult("a.com", reason="\ud800"), None)
