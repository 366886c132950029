"""Hostile pages: deep nesting, huge attributes, unclosed tags and 10 MB pages cost bounded CPU
and never reveal hidden text; arbitrary input never raises and never exceeds its limits."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmsift.adapters.search.html_evidence import (
    MARKUP_LIMIT,
    TITLE_CHARS,
    PageText,
    extract_page,
    text_from_fragment,
)

TEN_MB = 10_000_000
CPU_SECONDS = 5  # generous for a loaded 2-core machine; each case takes well under a second alone


def cpu_bounded(html: str, text_chars: int = 500) -> PageText:
    started = time.process_time()
    page = extract_page(html, text_chars=text_chars)
    assert time.process_time() - started < CPU_SECONDS
    return page


def test_ten_megabytes_of_nested_blocks_stop_at_the_markup_limit() -> None:
    # Nested blocks cost the parser depth x tags; past MARKUP_LIMIT "<"s nothing more is parsed.
    page = cpu_bounded("<p>shown</p>" + "<div>" * (TEN_MB // 5) + "late")
    assert page.text == "shown"


def test_nested_blocks_and_siblings_within_the_limit_stay_cheap() -> None:
    # The worst shape under the limit: a deep stack, then blocks that each scan all of it.
    half = MARKUP_LIMIT // 2
    page = cpu_bounded("<span>" * half + "<div></div>" * (half // 2) + "tail")
    assert page.text == "tail"


@pytest.mark.parametrize("tag", ['<meta name="description" content="secret">', "<title>secret</title>"])
def test_thousands_of_hidden_titles_or_metas_under_deep_nesting_are_linear(tag: str) -> None:
    page = cpu_bounded("<div hidden>" + "<div>" * (MARKUP_LIMIT // 2) + tag * (MARKUP_LIMIT // 4))
    assert page == PageText()


def test_markup_after_the_limit_is_not_read() -> None:
    page = cpu_bounded("<p>early</p>" + "<i></i>" * MARKUP_LIMIT + "<p>late</p>")
    assert page.text == "early"


@pytest.mark.parametrize(
    ("html", "shown"),
    [
        ('<div title="' + "x" * TEN_MB + '">shown</div>', "shown"),
        ('<div hidden data-x="' + "x" * TEN_MB + '">secret</div>shown', "shown"),
        ("<p>shown</p><div style=\"" + "color:red;" * (TEN_MB // 10) + 'display:none">secret</div>', "shown"),
        ('<p>shown</p><div title="' + "x" * TEN_MB, "shown"),  # never closed: not text
    ],
    ids=["huge-title", "huge-attribute-on-hidden", "huge-style-that-hides", "unterminated-huge-attribute"],
)
def test_huge_attributes(html: str, shown: str) -> None:
    assert cpu_bounded(html).text == shown


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: "<p>word " * 400_000, "word word"),
        (lambda: "<li>item " * 400_000, "item item"),
        (lambda: "<b>" * 400_000 + "bold", ""),  # past the markup limit: nothing after it is read
        (lambda: "<p>shown</p><div hidden>" + "<p>secret " * 400_000, "shown"),
        (lambda: "<p>shown</p><!--" + "secret " * 1_500_000, "shown"),
        (lambda: "<p>shown</p><script>" + "secret " * 1_500_000, "shown"),
    ],
    ids=["unclosed-p", "unclosed-li", "unclosed-formatting", "unclosed-hidden", "unclosed-comment",
         "unclosed-script"],
)
def test_unclosed_tags_on_multi_megabyte_pages(make: Callable[[], str], expected: str) -> None:
    page = cpu_bounded(make())
    assert page.text.startswith(expected) and "secret" not in page.text


def test_ten_megabytes_of_text_and_whitespace_give_bounded_text() -> None:
    page = cpu_bounded("<title>" + "t " * 500_000 + "</title><p>" + " \n\t" * 1_000_000 + "word " * 1_200_000)
    assert len(page.title) <= TITLE_CHARS and page.text.startswith("word word")
    assert len(page.text) <= 500 and page.text.endswith("…")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=5000), st.integers(min_value=0, max_value=2000))
def test_any_text_yields_bounded_fields(text: str, text_chars: int) -> None:
    page = extract_page(text, text_chars=text_chars)
    assert len(page.title) <= TITLE_CHARS and len(page.og_title) <= TITLE_CHARS
    assert max(len(page.text), len(page.description), len(page.og_description)) <= text_chars
    assert len(text_from_fragment(text, text_chars)) <= text_chars
