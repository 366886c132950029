"""Prompt assembly: a classifier's templates filled with the domain and delimited, untrusted evidence."""

from __future__ import annotations

from string import Template
from typing import Any

from firmsift.domain.model import Classifier, Evidence

MAX_EVIDENCE_CHARS = 6000
NO_EVIDENCE = "(no evidence could be gathered; answer from what you know, with confidence at most 2 if unsure)"


def build_prompt(classifier: Classifier, domain: str, evidence: list[Evidence], marker: str) -> tuple[str, str]:
    """(system, user) messages. `marker` must be unpredictable: evidence is wrapped between
    markers the page author cannot guess, so a page cannot close the block and speak as us."""
    values = {
        "domain": domain,
        "question": classifier.question,
        "definition": classifier.definition,
        "answer_field": classifier.answer_field,
        "marker": marker,
        "evidence": _evidence_block(evidence, marker),
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
        },
        "required": [classifier.answer_field, "confidence", "reasoning"],
        "additionalProperties": False,
    }


def _evidence_block(evidence: list[Evidence], marker: str) -> str:
    if not evidence:
        return NO_EVIDENCE
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
    body = "\n\n".join(parts)
    return f"<<<EVIDENCE {marker}>>>\n{body}\n<<<END EVIDENCE {marker}>>>"


def _clean(text: str, marker: str) -> str:
    # The marker is random, but never let the data repeat it verbatim.
    return " ".join(text.replace(marker, "").split())
