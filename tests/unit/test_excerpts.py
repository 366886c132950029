"""Excerpts of long text: never longer than asked, cut between words."""

from hypothesis import given, strategies as st

from firmsift.domain.excerpts import ELLIPSIS, excerpt

WORDS = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=12), min_size=1, max_size=60)


@given(words=WORDS, limit=st.integers(5, 200))
def test_an_excerpt_fits_and_ends_on_a_whole_word(words: list[str], limit: int) -> None:
    text = " ".join(words)
    cut = excerpt(text, limit)
    assert len(cut) <= limit
    if cut == text:
        return
    assert cut.endswith(ELLIPSIS)
    kept = cut[: -len(ELLIPSIS)]
    if " " in text[: limit]:  # there was a space to cut at: only whole words are kept
        assert kept.split(" ") == words[: len(kept.split(" "))]


@given(st.text(max_size=50))
def test_short_text_comes_back_on_one_line(text: str) -> None:
    assert excerpt(text, 100) == " ".join(text.split())
