"""Quotes checked against the evidence sent: examples for each rule and hypothesis properties."""

import pytest
from hypothesis import assume, given, strategies as st

from firmsift.domain.model import Evidence, QuoteStatus
from firmsift.domain.prompt import evidence_sent
from firmsift.domain.quotes import (
    MAX_QUOTE_CHARS,
    MIN_QUOTE_CHARS,
    check_quote,
    normalise,
    trusted_confidence,
)

SENT = ("[1] Acme Foods – Home\nURL: https://acme.example/\nAcme Foods makes crunchy peanut butter and "
        "straw\u00adberry jam, sold in grocery stores across Europe. Ben\u2019s \u201cfavourite\u201d since 1921.")
VERIFIED, UNVERIFIED = QuoteStatus.VERIFIED, QuoteStatus.UNVERIFIED


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        ("makes crunchy peanut butter and strawberry jam", VERIFIED),  # the soft hyphen is invisible
        ("ACME FOODS makes\n  crunchy\tpeanut butter", VERIFIED),  # case and whitespace
        ('"sold in grocery stores across Europe."', VERIFIED),  # wrapped in quotes, with its full stop
        ("\u201csold in grocery stores across Europe\u2026\u201d", VERIFIED),  # typographic marks around it
        ("Ben's \"favourite\" since 1921", VERIFIED),  # ASCII quotes for typographic ones
        ("Acme Foods - Home URL: https://acme.example/", VERIFIED),  # a hyphen for the en dash; lines joined
        ("sold in\u00a0grocery stores across \uff25urope", VERIFIED),  # NFKC: no-break space, full-width letter
        ("makes crunchy peanut butter and raspberry jam", UNVERIFIED),  # one word changed
        ("sells peanut butter in European grocery stores", UNVERIFIED),  # a paraphrase
        ("peanut butter ... across Europe", UNVERIFIED),  # passages joined
        ("peanut butter", UNVERIFIED),  # in the evidence, but too short to point at anything
        ("Acme", UNVERIFIED),
        ('"the"', UNVERIFIED),
        (None, QuoteStatus.NO_QUOTE),
        ("", QuoteStatus.NO_QUOTE),
        (" \n ", QuoteStatus.NO_QUOTE),
    ],
)
def test_a_quote_verifies_only_when_the_evidence_holds_it(quote: str | None, expected: QuoteStatus) -> None:
    assert check_quote(quote, SENT) is expected


def test_a_quote_over_the_length_limit_does_not_verify_even_when_the_evidence_holds_it() -> None:
    sent = " ".join(f"word{i}" for i in range(200))
    longest = sent[: sent.rfind(" ", 0, MAX_QUOTE_CHARS + 1)]
    assert len(longest) <= MAX_QUOTE_CHARS < len(longest) + 7
    assert check_quote(longest, sent) is VERIFIED
    assert check_quote(sent[: len(longest) + 7], sent) is UNVERIFIED


def test_without_evidence_no_quote_says_so_and_any_quote_is_unverified() -> None:
    assert check_quote(None, "") is QuoteStatus.NO_EVIDENCE
    assert check_quote("", "  ") is QuoteStatus.NO_EVIDENCE
    assert check_quote("Acme Foods makes crunchy peanut butter", "") is UNVERIFIED


@pytest.mark.parametrize(("status", "given", "kept"), [
    (VERIFIED, 5, 5), (VERIFIED, 3, 3),
    (UNVERIFIED, 5, 2), (QuoteStatus.NO_QUOTE, 4, 2), (QuoteStatus.NO_EVIDENCE, 3, 2),
    (UNVERIFIED, 2, 2), (UNVERIFIED, 1, 1),
])
def test_only_a_verified_quote_keeps_a_confidence_above_2(status: QuoteStatus, given: int, kept: int) -> None:
    assert trusted_confidence(given, status) == kept


# --- properties: what was sent verifies however it is re-spaced or re-cased; what was not, never ---

WHITESPACE = st.sampled_from([" ", "  ", "\n", "\t", " \n ", "\u00a0", "\u3000"])
items = st.builds(Evidence, url=st.just("https://a.example/"), title=st.text(max_size=40),
                  snippet=st.text(max_size=400))


def _flip_ascii_case(text: str, flips: list[bool]) -> str:
    return "".join(c.swapcase() if c.isascii() and flip else c for c, flip in zip(text, flips + [False] * len(text)))


@given(evidence=st.lists(items, min_size=1, max_size=3), data=st.data())
def test_any_passage_of_the_evidence_sent_verifies_after_whitespace_and_case_changes(evidence, data) -> None:
    sent = evidence_sent(evidence, "marker")
    words = sent.split()
    start = data.draw(st.integers(0, len(words) - 1))
    end = data.draw(st.integers(start + 1, len(words)))
    gaps = data.draw(st.lists(WHITESPACE, min_size=end - start, max_size=end - start))
    quote = "".join(word + gap for word, gap in zip(words[start:end], gaps))
    quote = _flip_ascii_case(quote, data.draw(st.lists(st.booleans(), max_size=len(quote))))
    passage = " ".join(words[start:end])
    assume(len(passage) <= MAX_QUOTE_CHARS and len(normalise(passage).strip(" \"'.,;:!?")) >= MIN_QUOTE_CHARS)
    assert check_quote(quote, sent) is VERIFIED


@given(evidence=st.lists(items, min_size=1, max_size=3), data=st.data())
def test_a_passage_with_words_the_evidence_lacks_never_verifies(evidence, data) -> None:
    sent = evidence_sent(evidence, "marker")
    assume("7777" not in normalise(sent))
    words = sent.split()
    start = data.draw(st.integers(0, len(words)))
    end = data.draw(st.integers(start, len(words)))
    cut = data.draw(st.integers(start, end))
    quote = " ".join([*words[start:cut], "acquired in 7777 by", *words[cut:end]])
    assert check_quote(quote, sent) is not VERIFIED


@given(st.text(max_size=200))
def test_normalising_twice_changes_nothing(text: str) -> None:
    assert normalise(normalise(text)) == normalise(text)
