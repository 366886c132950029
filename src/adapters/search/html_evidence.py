"""Clean, bounded text (title, meta, og tags, visible text) from untrusted HTML.

The markup is parsed by lexbor (through selectolax): a maintained, fuzzed HTML5 parser, so the tree
is the one a browser builds (misnested tags, unclosed elements, comments and raw text read as the
standard says). This module only decides what of that tree a reader would see."""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

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

# Elements whose content is never shown as page text (a title is the title, never text).
_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "object", "title"})
# Inline elements do not separate words; every other tag boundary does.
_INLINE = frozenset(
    {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd",
     "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var"}
)
_HIDING_STYLES = ("display:none", "visibility:hidden", "visibility:collapse")

TITLE_CHARS = 200
META_CHARS = 4000
# The tree builder scans its stack of open elements for every block start tag (the standard's "p
# in button scope"), so nested blocks cost depth x tags: 16,000 nested <div>s take about half a
# second here, 50,000 about nine. Real pages stay far below this many "<" (the page corpus' most is
# 3,980; 1.9 MB shop product pages 11,710), so only what follows the last one parsed is lost.
MARKUP_LIMIT = 12_000
_META_KEYS = ("description", "og:title", "og:description")


def clean_text(text: str) -> str:
    """Drop invisible characters and collapse whitespace to single spaces."""
    return _WHITESPACE.sub(" ", _INVISIBLE.sub("", text)).strip()


def bounded(text: str, limit: int) -> str:
    """Clean `text` and cut it to at most `limit` characters (an ellipsis marks a cut)."""
    text = clean_text(text)
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    return text[: limit - 1].rstrip() + "…"


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
    of visible text. Never raises: markup the parser refuses yields an empty PageText."""
    tree = _parse(html)
    if tree is None:
        return PageText()
    shown = _Shown()
    meta = _read_meta(tree, shown)
    return PageText(
        title=bounded(_first_title(tree, shown), TITLE_CHARS),
        description=bounded(meta.get("description", ""), text_chars),
        og_title=bounded(meta.get("og:title", ""), TITLE_CHARS),
        og_description=bounded(meta.get("og:description", ""), text_chars),
        text=bounded(_visible_text(tree.root, text_chars), text_chars),
    )


def text_from_fragment(fragment: str, limit: int) -> str:
    """Visible text of a small HTML fragment, such as a search snippet with <b> highlights."""
    tree = _parse(fragment)
    return "" if tree is None else bounded(_visible_text(tree.root, limit), limit)


def _parse(html: str) -> LexborHTMLParser | None:
    # Lone surrogates have no UTF-8 form (the parser reads UTF-8): drop them, as clean_text would.
    try:
        return LexborHTMLParser(_within_markup_limit(html).encode("utf-8", "ignore"), scripting=True)
    except SelectolaxError:
        return None


def _within_markup_limit(html: str) -> str:
    """`html` up to its MARKUP_LIMIT-th "<": elements left open there are closed at the end, so a
    cut can only hide text, never reveal hidden text."""
    if html.count("<") <= MARKUP_LIMIT:
        return html
    cut = -1
    for _ in range(MARKUP_LIMIT + 1):
        cut = html.index("<", cut + 1)
    return html[:cut]


def _squeeze(text: str) -> str:
    """Like clean_text, but keeps one leading/trailing space so pieces join as words."""
    return _WHITESPACE.sub(" ", _INVISIBLE.sub("", text))


def _squeezed_start(text: str, room: int) -> str:
    """The first `room` squeezed characters of `text`, squeezing only as much of it as they need:
    a 10 MB text node costs its first window, not a pass over 10 MB."""
    window = max(4 * room, 65_536)
    squeezed = ""
    for start in range(0, len(text), window):
        squeezed += _squeeze(text[start:start + window])
        if len(squeezed) >= room:
            break
    return squeezed[:room]


def _hides(node: LexborNode) -> bool:
    tag = node.tag or ""
    if tag in _DROPPED:
        return True
    attrs = {name: value or "" for name, value in node.attributes.items()}
    if "hidden" in attrs or attrs.get("aria-hidden", "").strip().lower() == "true":
        return True
    if tag == "input" and attrs.get("type", "").strip().lower() == "hidden":
        return True
    style = _WHITESPACE.sub("", attrs.get("style", "")).lower()
    return any(rule in style for rule in _HIDING_STYLES)


class _Shown:
    """Whether any ancestor of a node hides it, remembered per element: asking for thousands of
    titles or metas under thousands of elements stays linear, not ancestors x nodes."""

    def __init__(self) -> None:
        self._shown: dict[int, bool] = {}  # element (lexbor node address) -> shown

    def __call__(self, node: LexborNode) -> bool:
        unknown: list[LexborNode] = []
        shown = True
        element = node.parent
        while element is not None and element.is_element_node:
            if (known := self._shown.get(element.mem_id)) is not None:
                shown = known
                break
            unknown.append(element)
            element = element.parent
        for element in reversed(unknown):  # from the outermost down
            shown = shown and not _hides(element)
            self._shown[element.mem_id] = shown
        return shown


def _first_title(tree: LexborHTMLParser, shown: _Shown) -> str:
    """Only the first visible, non-empty title counts (one inside a hidden element may be bait)."""
    for title in tree.css("title"):
        text = title.text(deep=True)
        if text.strip() and shown(title):
            return _squeezed_start(text, TITLE_CHARS)
    return ""


def _read_meta(tree: LexborHTMLParser, shown: _Shown) -> dict[str, str]:
    meta: dict[str, str] = {}
    for node in tree.css("meta[name], meta[property]"):
        attrs = node.attributes
        key = (attrs.get("property") or attrs.get("name") or "").strip().lower()
        if key in _META_KEYS and key not in meta and shown(node):
            meta[key] = (attrs.get("content") or "")[:META_CHARS]
    return meta


def _visible_text(start: LexborNode, text_chars: int) -> str:
    """Text of the shown nodes under `start`, in document order, hidden subtrees skipped whole.

    Walked with child/next/parent links, not recursion, so nesting depth costs nothing; every
    boundary of a non-inline element separates words. Stops once the budget of squeezed
    characters is spent, so a huge page costs its parse, not a huge string."""
    budget = text_chars + 64  # squeezed characters kept before the final cut
    pieces: list[str] = []
    kept = 0

    def separate() -> None:
        if pieces and pieces[-1] != " ":
            pieces.append(" ")

    node = start.child
    while node is not None and kept < budget:
        descend = False
        if node.is_text_node:
            piece = _squeezed_start(node.text_content or "", budget - kept)
            pieces.append(piece)
            kept += len(piece)
        elif node.is_element_node:
            if node.tag not in _INLINE:
                separate()
            descend = node.child is not None and not _hides(node)
        if descend:
            node = node.child
            continue
        # Up to the next sibling, leaving (and separating after) each finished element.
        while node.next is None:
            node = node.parent
            if node is None or node.mem_id == start.mem_id:
                return "".join(pieces)
            if node.tag not in _INLINE:
                separate()
        node = node.next
    return "".join(pieces)
