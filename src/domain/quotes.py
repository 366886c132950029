"""Answers that cite their evidence: is the model's quote in the evidence text it was sent?

The model is asked for a short passage copied from the evidence that supports its answer. A
quote found there lets the answer keep its confidence; any other answer (a quote not found, too
short to mean anything, too long to point at anything, or no quote at all) keeps at most
confidence 2, so it is checked again within 30 days (freshness.py) and stands out for review.
"""

from __future__ import annotations

import unicodedata

from firmsift.domain.model import QuoteStatus

MIN_QUOTE_CHARS = 20  # normalised: a few words, so "the" or "snacks" cannot verify anything
MAX_QUOTE_CHARS = 300  # as written: a quote is a passage, not the whole evidence pasted back
UNVERIFIED_MAX_CONFIDENCE = 2

# Typographic quotes and dashes that models and pages swap for ASCII ones (NFKC keeps them apart;
# the forms NFKC already maps to these, such as U+2011 or U+FF0D, are not listed).
_UNIFIED = str.maketrans({
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u0060", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u00ab\u00bb", '"'),
    **dict.fromkeys("\u2010\u2012\u2013\u2014\u2015\u2212", "-"),
    # Invisible characters a page may hold between letters (soft hyphen, zero-width ones).
    **dict.fromkeys("\u00ad\u200b\u200c\u200d\u2060\ufeff", None),
})
# Trimmed from the ends of a quote only: the marks a model wraps a quote in, and the sentence's
# punctuation it may add or drop. Trimming only shortens a quote, so it never makes one verify
# that would not have verified as a part of it.
_EDGES = " \"'.,;:!?"


def normalise(text: str) -> str:
    """`text` as quotes are compared: Unicode NFKC, case folded, typographic quotes and dashes
    made ASCII, invisible characters dropped, whitespace runs made one space."""
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_UNIFIED)
    # NFKC again: case folding and the dropped invisible characters can leave letters to compose.
    return " ".join(unicodedata.normalize("NFKC", folded).split())


def check_quote(quote: str | None, evidence_sent: str) -> QuoteStatus:
    """Whether `quote` verifies against `evidence_sent`, the evidence text exactly as the prompt
    carried it ('' when there was none): VERIFIED when the quote, normalised and trimmed of
    wrapping marks, is MIN_QUOTE_CHARS or longer, was at most MAX_QUOTE_CHARS as written (its
    whitespace runs counted as one), and appears in the normalised evidence."""
    given = " ".join((quote or "").split())
    if not given:
        return QuoteStatus.NO_QUOTE if evidence_sent.strip() else QuoteStatus.NO_EVIDENCE
    if len(given) > MAX_QUOTE_CHARS:
        return QuoteStatus.UNVERIFIED
    needle = normalise(given).strip(_EDGES)
    if len(needle) < MIN_QUOTE_CHARS or needle not in normalise(evidence_sent):
        return QuoteStatus.UNVERIFIED
    return QuoteStatus.VERIFIED


def trusted_confidence(confidence: int, status: QuoteStatus) -> int:
    """The confidence an answer keeps: as the model gave it with a verified quote, else at most 2."""
    return confidence if status is QuoteStatus.VERIFIED else min(confidence, UNVERIFIED_MAX_CONFIDENCE)
