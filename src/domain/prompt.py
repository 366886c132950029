"""Prompt assembly: a classifier's templates filled with the domain and delimited, untrusted evidence."""

from __future__ import annotations

from string import Template
from typing import Any

from firmsift.domain.model import Classifier, Evidence
from firmsift.domain.quotes import MAX_QUOTE_CHARS

MAX_EVIDENCE_CHARS = 6000
NO_EVIDENCE = ("(no evidence could be gathered; answer from what you know, with confidence at most 2 if unsure, "
               "and an empty quote)")


def build_prompt(classifier: Classifier, domain: str, evidence: list[Evidence], marker: str) -> tuple[str, str]:
    """(system, user) messages. `marker` must be unpredictable: evidence is wrapped between
    markers the page author cannot guess, so a page cannot close the block and speak as us."""
    values = {
        "domain": domain,
        "question": classifier.question,
        "definition": classifier.definition,
        "answer_field": classifier.answer_field,
        "marker": marker,
        "quote_max_chars": str(MAX_QUOTE_CHARS),
        "evidence": _evidence_block(evidence_sent(evidence, marker), marker),
    }
    system = Template(classifier.system_prompt).safe_substitute(values)
    user = Template(classifier.user_prompt).safe_substitute(values)
    return system, user


def answer_schema(classifier: Classifier) -> dict[str, Any]:
    """The JSON schema asked of providers that support structured output."""
    return {
        "type": "object",
        "properties": {
            classifier.answer_field: {"type": "boolean"},
            "confidence": {"type": "integer", "minimum": 1, "maximum": 5},
            "reasoning": {"type": "string"},
            # The limit is said, not enforced: OpenAI's strict mode refuses maxLength.
            "quote": {"type": "string", "description": (
                f"a passage copied word for word from the evidence that supports the answer, at most "
                f"{MAX_QUOTE_CHARS} characters; empty when there is no evidence")},
        },
        "required": [classifier.answer_field, "confidence", "reasoning", "quote"],
        "additionalProperties": False,
    }


def evidence_sent(evidence: list[Evidence], marker: str) -> str:
    """The evidence text exactly as the prompt carries it between its markers, cut to
    MAX_EVIDENCE_CHARS ('' when there is none): what the model's quote is checked against."""
    parts: list[str] = []
    budget = MAX_EVIDENCE_CHARS
    for number, item in enumerate(evidence, start=1):
        entry = f"[{number}] {_clean(item.title, marker)}\nURL: {_clean(item.url, marker)}\n{_clean(item.snippet, marker)}"
        if len(entry) > budget:
            entry = entry[:budget]
        parts.append(entry)
        budget -= len(entry)
        if budget <= 0:
            break
    return "\n\n".join(parts)


def _evidence_block(sent: str, marker: str) -> str:
    if not sent:
        return NO_EVIDENCE
    return f"<<<EVIDENCE {marker}>>>\n{sent}\n<<<END EVIDENCE {marker}>>>"


def _clean(text: str, marker: str) -> str:
    # The marker is random, but never let the data repeat it verbatim.
    return " ".join(text.replace(marker, "").split())
