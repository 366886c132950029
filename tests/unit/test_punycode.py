"""Punycode with an early stop: the stdlib codec's output whenever it fits, None when it does not."""

from hypothesis import given, strategies as st

from firmsift.domain.punycode import encode_within

_LABEL = st.text(st.characters(exclude_categories=["Cs"]), max_size=70)


@given(_LABEL, st.integers(0, 300))
def test_the_encoding_is_the_stdlib_codecs_when_it_fits_and_none_when_it_does_not(label: str, limit: int) -> None:
    expected = label.encode("punycode").decode("ascii")
    assert encode_within(label, limit) == (expected if len(expected) <= limit else None)


def test_rfc_3492_sample_strings() -> None:
    # RFC 3492, 7.1 (A) Arabic (Egyptian) and (L) Japanese, and a label with basic code points.
    arabic = "\u0644\u064a\u0647\u0645\u0627\u0628\u062a\u0643\u0644\u0645\u0648\u0634\u0639\u0631\u0628\u064a\u061f"
    assert encode_within(arabic, 63) == "egbpdaj6bu4bxfgehfvwxn"
    assert encode_within("3\u5e74b\u7d44\u91d1\u516b\u5148\u751f", 63) == "3b-ww4c5e180e575a65lsy2b"
    assert encode_within("bücher", 63) == "bcher-kva"
    assert encode_within("bücher", 8) is None
