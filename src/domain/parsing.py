"""Defensive parsing of model output into a verdict: the real guarantee behind structured output."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MAX_REASON_LENGTH = 500
MAX_JSON_ATTEMPTS = 64
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*")
_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0"})
_CONFIDENCE = re.compile(r"^\s*([1-5])(?:\.0+)?\s*$")


@dataclass(frozen=True)
class ParsedVerdict:
    answer: bool
    confidence: int
    reason: str


@dataclass(frozen=True)
class ParseFailure:
    error: str
    raw: str


def parse_verdict(raw: object, answer_field: str) -> ParsedVerdict | ParseFailure:
    """Read `{answer_field, confidence, reasoning}` from model output; never raises."""
    if not isinstance(raw, str):
        return ParseFailure(f"model output is {type(raw).__name__}, not text", repr(raw))
    try:
        return _parse(raw, answer_field)
    except RecursionError:
        return ParseFailure("model output nests too deeply to read", raw)


def _parse(raw: str, answer_field: str) -> ParsedVerdict | ParseFailure:
    text = _THINK_BLOCK.sub("", raw)
    # A lone closing tag means the opening one was cut off (or never sent): keep what follows it.
    closing = list(_THINK_CLOSE.finditer(text))
    if closing:
        text = text[closing[-1].end() :]
    # An opening tag never closed: the output was cut off while thinking; nothing after it is an answer.
    opening = _THINK_OPEN.search(text)
    if opening:
        text = text[: opening.start()]
    text = _FENCE.sub("", text)
    document = _first_json_object(text)
    if document is None:
        return ParseFailure("no JSON object in model output", raw)
    answer = _read_bool(_field(document, answer_field, "answer"))
    if answer is None:
        return ParseFailure(f"{answer_field!r} is not clearly true or false", raw)
    confidence = _read_confidence(document.get("confidence"))
    if confidence is None:
        return ParseFailure("'confidence' is not an integer from 1 to 5", raw)
    return ParsedVerdict(answer=answer, confidence=confidence, reason=_read_reason(document))


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


def _read_confidence(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 1 <= value <= 5 else None
    if isinstance(value, float):
        return int(value) if value.is_integer() and 1 <= value <= 5 else None
    if isinstance(value, str):
        match = _CONFIDENCE.match(value)
        return int(match.group(1)) if match else None
    return None


def _read_reason(document: dict[str, object]) -> str:
    reason = _field(document, "reasoning", "reason")
    if not isinstance(reason, str):
        return ""
    one_line = " ".join(reason.split())
    return one_line[:MAX_REASON_LENGTH]
