"""The plain-name path of normalization gives what the full path gives, on generated inputs built
to sit on its edges (schemes, www labels, xn--, reserved and odd top-level labels, long names,
ports, userinfo, whitespace, upper case, non-ASCII, tails)."""

from collections.abc import Callable

import pytest
from hypothesis import example, given, settings, strategies as st

from firmsift.domain.normalize import DomainRejected, _normalize_in_full, _plain_name, normalize_domain

_SCHEMES = st.sampled_from(["", "http://", "https://", "HTTPS://", "ftp://", "//", "https:///", " ", "u@",
                            "https://u:p@"])
_LABEL = st.one_of(
    st.sampled_from(["www", "WWW", "xn--mnchen-3ya", "xn--a", "a", "-a", "a-", "a--b", "0", "1", "", "ß", "例"]),
    st.from_regex(r"[a-z0-9][a-z0-9-]{0,64}[a-z0-9]", fullmatch=True),
    st.text("aw0-.xn", max_size=8),
)
_TLD = st.sampled_from(["com", "co", "c", "example", "localhost", "test", "arpa", "xn--p1ai", "c0m", "Com", "1", "",
                        "a" * 63, "a" * 64, "com.", "com..", "рф"])
_TAIL = st.one_of(
    st.sampled_from(["", "/", "/a b", "?q=1", "#f", ":80", ":0", ":", "\\", "/\\", "@x", ".", "/\t", "/\x7f", "/é"]),
    st.text(st.characters(max_codepoint=0x7f), max_size=6).map(lambda text: "/" + text),
)


@st.composite
def near_plain(draw: st.DrawFn) -> str:
    """A URL or name made of parts on the plain path's edges, now and then with a character
    inserted anywhere."""
    labels = draw(st.lists(_LABEL, min_size=0, max_size=6))
    if draw(st.booleans()):
        labels = ["www"] * draw(st.integers(1, 70)) + labels
    raw = draw(_SCHEMES) + ".".join([*labels, draw(_TLD)]) + draw(_TAIL)
    if raw and draw(st.booleans()):
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.characters()) + raw[at:]
    return raw


def _outcome(normalize: Callable[[str], str], raw: str) -> str:
    try:
        return normalize(raw)
    except DomainRejected as rejected:
        return f"rejected: {rejected}"


@settings(max_examples=3000, deadline=None)
@given(st.one_of(near_plain(), st.text(max_size=40)))
@example("https://www.company1.example.com/")
@example("www." * 62 + "example.com")  # 251 characters: stripped to example.com by both
@example("a." * 126 + "com")  # 255 characters: longer than a name may be
def test_normalizing_gives_what_the_full_path_gives(raw: str) -> None:
    assert _outcome(normalize_domain, raw) == _outcome(_normalize_in_full, raw)


@pytest.mark.parametrize(("raw", "expected"), [
    ("https://www.company1.example.com/", "company1.example.com"),
    ("http://shop.example.co.uk/a/b?c=d#e", "shop.example.co.uk"),
    ("www.www.acme.com", "acme.com"),
    ("www.com", "www.com"),
    ("acme.com?q=1", "acme.com"),
])
def test_plain_names_take_the_plain_path(raw: str, expected: str) -> None:
    assert _plain_name(raw) == expected


@pytest.mark.parametrize("raw", [
    "Acme.com", " acme.com", "acme.com.", "acme.com:443", "u@acme.com", "acme.example", "xn--mnchen-3ya.de",
    "münchen.de", "acme.com/a b", "acme.com/a\\b", "a." * 126 + "com", "127.0.0.1", "acme.c0m",
])
def test_anything_else_is_left_to_the_full_path(raw: str) -> None:
    assert _plain_name(raw) is None
