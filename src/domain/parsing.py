"""Defensive parsing of model output into a verdict: the real guarantee behind structured output."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

MAX_REASON_LENGTH = 500
MAX_JSON_ATTEMPTS = 64
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*")
_WHOLE_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*(.*?)\s*```", re.DOTALL)
_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0"})
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_FRACTION = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class ParsedVerdict:
    answer: bool
    confidence: int
    reason: str
    # The model's quote from the evidence, on one line; None when it gave none (an older prompt,
    # a small model) or gave something other than text: the answer then says `no_quote`.
    quote: str | None = None


@dataclass(frozen=True)
class ParseFailure:
    error: str
    raw: str


def parse_verdict(raw: object, answer_field: str) -> ParsedVerdict | ParseFailure:
    """Read `{answer_field, confidence, reasoning, quote}` from model output; never raises.
    Only the answer and the confidence are required."""
    if not isinstance(raw, str):
        return ParseFailure(f"model output is {type(raw).__name__}, not text", repr(raw))
    try:
        return _parse(raw, answer_field)
    except RecursionError:
        return ParseFailure("model output nests too deeply to read", raw)


def _parse(raw: str, answer_field: str) -> ParsedVerdict | ParseFailure:
    # An output that is one JSON object (perhaps in one fence) is read as it is: its strings may
    # hold "<think>" or "```" as quoted text, which the clean-up below would cut.
    document = _whole_json_object(raw)
    if document is None:
        document = _first_json_object(_without_thinking_or_fences(raw))
    if document is None:
        return ParseFailure("no JSON object in model output", raw)
    answer = _read_bool(_field(document, answer_field, "answer"))
    if answer is None:
        return ParseFailure(f"{answer_field!r} is not clearly true or false", raw)
    confidence = read_confidence(document.get("confidence"))
    if confidence is None:
        return ParseFailure("'confidence' is not a number from 0 to 100, a percentage or a fraction", raw)
    return ParsedVerdict(answer=answer, confidence=confidence, reason=_read_reason(document),
                         quote=_read_quote(document))


def _whole_json_object(raw: str) -> dict[str, object] | None:
    text = raw.strip()
    if fence := _WHOLE_FENCE.fullmatch(text):
        text = fence.group(1)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _without_thinking_or_fences(raw: str) -> str:
    text = _THINK_BLOCK.sub("", raw)
    # A lone closing tag means the opening one was cut off (or never sent): keep what follows it.
    closing = list(_THINK_CLOSE.finditer(text))
    if closing:
        text = text[closing[-1].end() :]
    # An opening tag never closed: the output was cut off while thinking; nothing after it is an answer.
    opening = _THINK_OPEN.search(text)
    if opening:
        text = text[: opening.start()]
    return _FENCE.sub("", text)


def _first_json_object(text: str) -> dict[str, object] | None:
    decoder = json.JSONDecoder()
    start = text.find("{")
    attempts = 0
    # Bounded: garbage full of braces must not make parsing quadratic.
    while start != -1 and attempts < MAX_JSON_ATTEMPTS:
        attempts += 1
        try:
            value, _end = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


def _field(document: dict[str, object], name: str, alias: str) -> object:
    return document[name] if name in document else document.get(alias)


def _read_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def read_confidence(value: object) -> int | None:
    """A confidence on firmsift's 1-5 scale, from however the model wrote it; None if unreadable.

    The one rule: the value is read as a share of certainty p from 0 to 1, then stored as
    1 + 4p rounded half up. A number from 1 to 5 is on the 1-5 scale itself (p = (c - 1) / 4,
    so 1-5 keep their value and 4.5 becomes 5); a number from 0 to below 1 is p itself (0.8);
    a number above 5 up to 100 is a percentage (85, "85%"); "a/b" is a/b ("4/5"). Numbers may be
    written as strings. Negative numbers, numbers above 100, booleans and words fail the answer.
    Where the reading is ambiguous (6 on a 1-10 scale reads as 6 %), it errs low: a low confidence
    is only re-asked sooner, never trusted longer.
    """
    share = _share_of_certainty(value)
    if share is None:
        return None
    return 1 + math.floor(4 * share + 0.5)


def _share_of_certainty(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return _share_from_text(value.strip())
    if isinstance(value, (int, float)):
        return _share_from_number(float(value))
    return None


def _share_from_text(text: str) -> float | None:
    if match := _PERCENT.fullmatch(text):
        percent = float(match.group(1))
        return percent / 100 if percent <= 100 else None
    if match := _FRACTION.fullmatch(text):
        part, whole = float(match.group(1)), float(match.group(2))
        return part / whole if 0 < whole and part <= whole else None
    if _NUMBER.fullmatch(text):
        return _share_from_number(float(text))
    return None


def _share_from_number(number: float) -> float | None:
    if not math.isfinite(number) or number < 0 or number > 100:
        return None
    if number < 1:
        return number
    if number <= 5:
        return (number - 1) / 4
    return number / 100


def _read_reason(document: dict[str, object]) -> str:
    reason = _field(document, "reasoning", "reason")
    if not isinstance(reason, str):
        return ""
    one_line = " ".join(reason.split())
    return one_line[:MAX_REASON_LENGTH]


def _read_quote(document: dict[str, object]) -> str | None:
    quote = document.get("quote")
    if not isinstance(quote, str):
        return None
    return " ".join(quote.split()) or None
