"""In-memory LLM and search doubles that record calls and replay queued answers, and fixed prices."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any

from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence
from firmsift.ports.providers import Completion


@dataclass(frozen=True)
class LLMCall:
    system: str
    user: str
    json_schema: dict[str, Any]


# A passage of every StaticSearch snippet: the scripted default quotes it, so the default answer
# verifies against StaticSearch's evidence and keeps its confidence.
STATIC_EVIDENCE_PASSAGE = "makes and sells packaged snacks and drinks"
SCRIPTED_ANSWER = ('{"answer": true, "confidence": 4, "reasoning": "scripted", '
                   f'"quote": "{STATIC_EVIDENCE_PASSAGE}"}}')


class ScriptedLLM:
    """Answers from a queue of scripted replies (text, or an exception to raise), then a default.

    `history` records every call, so a test can assert how often the LLM was asked and with what.
    """

    def __init__(self, default: str | Exception = SCRIPTED_ANSWER,
                 *, model: str = "scripted-model", delay: float = 0.0, by_domain: dict[str, str | Exception] | None = None,
                 tokens: tuple[int, int] | None = None) -> None:
        self.model = model
        self.default = default
        self.delay = delay
        self.by_domain = by_domain or {}  # a reply per domain, whatever order concurrent calls come in
        self.tokens = tokens  # (prompt, completion) tokens reported with each answer
        self.history: list[LLMCall] = []
        self._queue: deque[str | Exception] = deque()
        self.in_flight = 0
        self.max_in_flight = 0

    def enqueue(self, *replies: str | Exception) -> None:
        self._queue.extend(replies)

    def calls_about(self, domain: str) -> int:
        return sum(1 for call in self.history if _asks_about(call.user, domain))

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        self.history.append(LLMCall(system, user, json_schema))
        reply = self._queue.popleft() if self._queue else self._reply_for(user)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        if isinstance(reply, Exception):
            raise reply
        prompt_tokens, completion_tokens = self.tokens or (None, None)
        return Completion(text=reply, model=self.model, finish_reason="stop", prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens)

    def _reply_for(self, user: str) -> str | Exception:
        for domain, reply in self.by_domain.items():
            if _asks_about(user, domain):
                return reply
        return self.default


def _asks_about(user: str, domain: str) -> bool:
    """The user message is about `domain` (the classifiers' templates open with `Domain: $domain`)."""
    return f"Domain: {domain}\n" in user


class StaticSearch:
    """Returns the same kind of evidence for every domain (or `evidence` as given, `[]` for none),
    or raises `failure` when set. `queries` records the domains asked about, in order."""

    def __init__(self, failure: ProviderError | None = None, *, name: str = "static",
                 evidence: list[Evidence] | None = None) -> None:
        self.name = name
        self.failure = failure
        self.evidence = evidence
        self.queries: list[str] = []

    async def gather(self, domain: str) -> list[Evidence]:
        self.queries.append(domain)
        if self.failure is not None:
            raise self.failure
        if self.evidence is not None:
            return list(self.evidence)
        return [Evidence(url=f"https://{domain}/about", title=f"About {domain}",
                         snippet=f"{domain} {STATIC_EVIDENCE_PASSAGE}.")]


class FixedPricing:
    """Prices in USD per million tokens, the same for every model; None for models in `unknown`."""

    def __init__(self, per_input: float, per_output: float, unknown: frozenset[str] = frozenset()) -> None:
        self.per_input, self.per_output, self.unknown = per_input, per_output, unknown

    def cost(self, model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        if model in self.unknown or prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * self.per_input + completion_tokens * self.per_output) / 1_000_000
