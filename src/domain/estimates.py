"""The price of a batch before it is paid: where each domain would be answered from, and what the
domains left to ask the LLM should cost in tokens, dollars and time.

Tokens per question come from the stored answers of the classifier when there are enough of
them (`TokenHistory`), else from the prompt itself: its length with no evidence, plus evidence
of a typical size, at about four characters a token. Every figure says which basis it rests on;
a price or a time that cannot be known is None (said "unknown"), never 0.

Wall time comes from the latencies stored with the classifier's recent LLM answers
(`LatencyHistory`): the mean, not the median, because a worker's time is the sum of its calls'
times (a slow call holds its slot as long as it takes), divided by what runs at once. A worker is
held back by the slowest of three limits: its LLM slots (each held for an LLM call, retries and
rate-budget waits included), its requests per minute to the LLM, and the domains it works on at
once (each held for its evidence and its LLM call). With no stored latency the time is unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from firmsift.domain.model import Classifier
from firmsift.domain.prompt import MAX_EVIDENCE_CHARS, build_prompt

MIN_SAMPLES = 20  # stored answers with token counts before their average is trusted over the prompt's length
CHARS_PER_TOKEN = 4  # English text in the GPT tokenizers, roughly
TYPICAL_EVIDENCE_CHARS = MAX_EVIDENCE_CHARS // 2  # search snippets and a homepage excerpt, cut as prompt.py cuts them
TYPICAL_ANSWER_TOKENS = 120  # the JSON answer: a boolean, a confidence, a few sentences of reasoning, a quote
LATENCY_SAMPLES = 200  # the most recent LLM answers with a stored latency whose mean predicts the next ones
STORED = "stored"  # basis: the average of stored answers
PROMPT = "prompt"  # basis: the prompt's length


@dataclass(frozen=True)
class TokenHistory:
    """What the classifier's stored LLM answers used: how many report tokens, and their averages."""

    answers: int = 0
    tokens_in: float = 0.0
    tokens_out: float = 0.0


@dataclass(frozen=True)
class LatencyHistory:
    """How long the classifier's most recent LLM answers (up to LATENCY_SAMPLES) took: how many
    stored a latency, and the means of their LLM call and of their evidence gathering."""

    answers: int = 0
    llm_seconds: float = 0.0
    evidence_seconds: float = 0.0


@dataclass(frozen=True)
class WorkerPace:
    """What a worker runs at once: FIRMSIFT_LLM_CONCURRENCY calls, FIRMSIFT_LLM_REQUESTS_PER_MINUTE
    (0: no limit), and FIRMSIFT_WORKER_JOBS jobs of up to FIRMSIFT_DOMAIN_CONCURRENCY domains each."""

    llm_concurrency: int
    llm_requests_per_minute: float = 0.0
    domains_at_once: int = 1

    def __post_init__(self) -> None:
        if self.llm_concurrency < 1 or self.domains_at_once < 1 or self.llm_requests_per_minute < 0:
            raise ValueError(f"a worker runs at least one call and one domain at once: {self}")


@dataclass(frozen=True)
class TokensPerQuestion:
    tokens_in: int
    tokens_out: int
    basis: str  # STORED or PROMPT
    samples: int  # stored answers averaged (0 for PROMPT)


@dataclass(frozen=True)
class DomainTally:
    """Where a batch's unique domains would be answered from, had it been submitted now."""

    human: int = 0  # a person's answer for this domain: used before anything else, no call
    known: int = 0  # known companies: answered without any call
    cached: int = 0  # a fresh stored answer of this classifier
    cached_precheck: int = 0  # a fresh pre-check outcome (no DNS, unreachable, parked)
    new: int = 0  # pre-checked when the pre-check is on, and asked unless it ends them


def tokens_per_question(history: TokenHistory, classifier: Classifier) -> TokensPerQuestion:
    """Tokens one question should use: the stored average once MIN_SAMPLES answers report tokens,
    else the prompt's length with typical evidence, and a typical answer's length."""
    if history.answers >= MIN_SAMPLES:
        return TokensPerQuestion(round(history.tokens_in), round(history.tokens_out), STORED, history.answers)
    system, user = build_prompt(classifier, "example.com", [], "0" * 24)
    chars = len(system) + len(user) + TYPICAL_EVIDENCE_CHARS
    return TokensPerQuestion(math.ceil(chars / CHARS_PER_TOKEN), TYPICAL_ANSWER_TOKENS, PROMPT, 0)


def estimated_tokens(tally: DomainTally, per_question: TokensPerQuestion) -> tuple[int, int]:
    """(tokens in, tokens out) of asking the LLM about every new domain."""
    return tally.new * per_question.tokens_in, tally.new * per_question.tokens_out


def wall_seconds(to_ask: int, latency: LatencyHistory, pace: WorkerPace) -> float | None:
    """Seconds one worker needs to ask about `to_ask` domains at `pace`, by the slowest of its
    limits; None (unknown) when no answer of the classifier stored its latency."""
    if to_ask == 0:
        return 0.0
    if latency.answers == 0:
        return None
    slots = to_ask * latency.llm_seconds / pace.llm_concurrency
    domains = to_ask * (latency.evidence_seconds + latency.llm_seconds) / pace.domains_at_once
    rate = to_ask * 60.0 / pace.llm_requests_per_minute if pace.llm_requests_per_minute else 0.0
    return max(slots, domains, rate)


def spelled_duration(seconds: float) -> str:
    """"2 h 5 min", "3 min 20 s", "41 s": seconds as a person reads them, rounded up."""
    minutes, secs = divmod(math.ceil(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else (f"{minutes} min {secs} s" if minutes else f"{secs} s")


def wall_time_text(seconds: float | None, latency: LatencyHistory) -> str:
    """The wall time for a person, with what it rests on."""
    if seconds is None:
        return "unknown: no LLM answer of this classifier has stored its latency yet"
    if seconds == 0:
        return "none to ask"
    return (f"about {spelled_duration(seconds)} for one worker (mean of the latest {latency.answers} answers: LLM "
            f"{latency.llm_seconds:.2f} s, evidence {latency.evidence_seconds:.2f} s)")


def estimate_document(tally: DomainTally, *, model: str, per_question: TokensPerQuestion, cost_usd: float | None,
                      precheck: bool, latency: LatencyHistory, pace: WorkerPace) -> dict[str, Any]:
    """What the dry run adds to a batch's counts. `cost_usd` prices estimated_tokens (None: unknown)."""
    tokens_in, tokens_out = estimated_tokens(tally, per_question)
    seconds = wall_seconds(tally.new, latency, pace)
    basis = (f"average of {per_question.samples} stored answers of this classifier" if per_question.basis == STORED
             else f"prompt length with typical evidence (fewer than {MIN_SAMPLES} stored answers report tokens)")
    return {
        "human_answers": tally.human,
        "known_companies": tally.known,
        "cached": tally.cached,
        "cached_precheck": tally.cached_precheck,
        "to_precheck": tally.new if precheck else 0,
        "to_ask": tally.new,
        "llm": {
            "model": model,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "tokens_per_domain": {"tokens_in": per_question.tokens_in, "tokens_out": per_question.tokens_out},
            "tokens_basis": basis,
            "cost_usd": None if cost_usd is None else round(cost_usd, 6),
            "cost": "known" if cost_usd is not None else (
                f"unknown: no price for {model} (set FIRMSIFT_LLM_INPUT_COST_PER_MILLION and "
                "FIRMSIFT_LLM_OUTPUT_COST_PER_MILLION)"),
            "concurrency": pace.llm_concurrency,
            "requests_per_minute": pace.llm_requests_per_minute or None,
            "domains_at_once": pace.domains_at_once,
            "wall_time_seconds": None if seconds is None else round(seconds, 1),
            "wall_time": wall_time_text(seconds, latency),
        },
        "upper_bound": ("to_ask counts every new domain: the pre-check may end some (no DNS, unreachable, parked) "
                        "before the LLM is asked" if precheck else "to_ask counts every new domain"),
    }
