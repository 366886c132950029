"""Clean, bounded text (title, meta, og tags, visible text) from untrusted HTML."""

from __future__ import annotations

import html as html_entities
import re
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser

# Characters a reader cannot see but a model can: control and format characters
# (zero-width spaces and joiners, bidi overrides, soft hyphen, Unicode tag
# characters), surrogates, private use, variation selectors and blank fillers.
# Generated from unicodedata (Cc except whitespace, Cf, Cs, Co) under Python 3.11.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\xad\u034f\u0600-\u0605\u061c\u06dd\u070f"
    "\u0890-\u0891\u08e2\u115f-\u1160\u17b4-\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u2800\u3164\ud800-\uf8ff\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef\U000f0000-\U000ffffd"
    "\U00100000-\U0010fffd]"
)
_WHITESPACE = re.compile(r"\s+")

# Elements whose content is never shown as page text.
_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object"})
# Elements that never have content or an end tag.
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
     "source", "track", "wbr"}
)
# Inline elements do not separate words; every other tag boundary does.
_INLINE = frozenset(
    {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd",
     "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var"}
)
_HIDING_STYLES = ("display:none", "visibility:hidden", "visibility:collapse")

TITLE_CHARS = 200
MAX_OPEN_ELEMENTS = 2000


def clean_text(text: str) -> str:
    """Drop invisible characters and collapse whitespace to single spaces."""
    return _WHITESPACE.sub(" ", _INVISIBLE.sub("", text)).strip()


def bounded(text: str, limit: int) -> str:
    """Clean `text` and cut it to at most `limit` characters (an ellipsis marks a cut)."""
    text = clean_text(text)
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)].rstrip() + "…"


@dataclass(frozen=True)
class PageText:
    """What a page says about itself, as clean bounded strings."""

    title: str = ""
    description: str = ""
    og_title: str = ""
    og_description: str = ""
    text: str = ""


def extract_page(html: str, *, text_chars: int = 1000) -> PageText:
    """Title, meta description, og:title/og:description and the first `text_chars` characters
    of visible text. Never raises: hostile markup yields whatever was read before it."""
    parser = _PageParser(text_chars)
    parser.read(html)
    return PageText(
        title=bounded(parser.title, TITLE_CHARS),
        description=bounded(parser.meta.get("description", ""), text_chars),
        og_title=bounded(parser.meta.get("og:title", ""), TITLE_CHARS),
        og_description=bounded(parser.meta.get("og:description", ""), text_chars),
        text=bounded(parser.visible_text(), text_chars),
    )


def text_from_fragment(fragment: str, limit: int) -> str:
    """Visible text of a small HTML fragment, such as a search snippet with <b> highlights."""
    parser = _PageParser(limit)
    parser.read(fragment)
    return bounded(parser.visible_text(), limit)


def _squeeze(text: str) -> str:
    """Like clean_text, but keeps one leading/trailing space so pieces join as words."""
    return _WHITESPACE.sub(" ", _INVISIBLE.sub("", text))


def _hides(tag: str, attrs: dict[str, str]) -> bool:
    if tag in _DROPPED or "hidden" in attrs:
        return True
    if attrs.get("aria-hidden", "").strip().lower() == "true":
        return True
    if tag == "input" and attrs.get("type", "").strip().lower() == "hidden":
        return True
    style = _WHITESPACE.sub("", attrs.get("style", "")).lower()
    return any(rule in style for rule in _HIDING_STYLES)


class _PageParser(HTMLParser):
    """Collects title, meta tags and visible text, skipping hidden and dropped subtrees.

    Open elements are kept on a stack of (tag, hides); an end tag closes everything up to
    its matching start tag, as browsers do, and an unmatched end tag is ignored, so broken
    markup can only hide more text, never reveal hidden text."""

    def __init__(self, text_chars: int) -> None:
        super().__init__(convert_charrefs=True)
        self._open: list[tuple[str, bool]] = []
        # How many of each tag are open: an end tag's match is found in O(1), not by scanning the
        # stack, so "<div>"*50000 + "</p>"*60000 costs linear time, not minutes.
        self._open_counts: Counter[str] = Counter()
        self._too_deep = False
        self._hidden_depth = 0
        self._titles_open = 0
        self._title_done = False
        self._text_budget = text_chars + 64  # squeezed characters kept before the final cut
        self._pieces: list[str] = []
        self._kept = 0
        self.title = ""
        self.meta: dict[str, str] = {}

    def read(self, html: str) -> None:
        try:
            self.feed(html)
            self._finish()
        except (AssertionError, ValueError, IndexError, TypeError):
            # The stdlib parser can fail on malformed declarations; keep what was read.
            pass

    def _finish(self) -> None:
        """Unlike close(), never emit an unterminated tag or comment as text: only the plain
        text before it (an unclosed `<!-- ...` must stay hidden)."""
        rest, self.rawdata = self.rawdata, ""
        cut = rest.find("<")
        self.handle_data(html_entities.unescape(rest if cut < 0 else rest[:cut]))

    def visible_text(self) -> str:
        return "".join(self._pieces)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._too_deep:
            return
        values = {name: value or "" for name, value in attrs}
        hidden = self._hidden_depth > 0
        if tag == "meta" and not hidden:
            self._read_meta(values)
        if tag not in _INLINE:
            self._separate()
        if tag in _VOID:
            return
        if len(self._open) >= MAX_OPEN_ELEMENTS:
            # No real page nests this deep; stop reading rather than risk showing hidden text.
            self._too_deep = True
            return
        hides = _hides(tag, values)
        self._open.append((tag, hides))
        self._open_counts[tag] += 1
        self._hidden_depth += hides
        self._titles_open += tag == "title"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # Browsers ignore the self-closing flag on HTML elements, so `<div hidden/>` opens.
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag not in _INLINE:
            self._separate()
        if self._too_deep or not self._open_counts[tag]:
            return
        while self._open:
            open_tag, hides = self._open.pop()
            self._open_counts[open_tag] -= 1
            self._hidden_depth -= hides
            if open_tag == "title":
                self._titles_open -= 1
                self._title_done = self._title_done or bool(self.title.strip())
            if open_tag == tag:
                return

    def handle_data(self, data: str) -> None:
        if self._too_deep:
            return
        if self._titles_open:
            # Only the first visible title counts; no title is ever page text.
            if not (self._title_done or self._hidden_depth) and len(self.title) < TITLE_CHARS:
                self.title += _squeeze(data)[:TITLE_CHARS]
            return
        if self._hidden_depth or self._kept >= self._text_budget:
            return
        # Budget squeezed text, so indentation and invisible padding cannot use it up.
        piece = _squeeze(data)[: self._text_budget - self._kept]
        self._pieces.append(piece)
        self._kept += len(piece)

    def _separate(self) -> None:
        if self._pieces and self._pieces[-1] != " ":
            self._pieces.append(" ")

    def _read_meta(self, values: dict[str, str]) -> None:
        key = (values.get("property") or values.get("name") or "").strip().lower()
        if key in ("description", "og:title", "og:description") and key not in self.meta:
            self.meta[key] = values.get("content", "")[:4000]
