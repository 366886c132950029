"""The body of POST /batches?dry_run=true: what a batch would cost (domain.estimates), recording nothing."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from firmsift.domain.estimates import LATENCY_SAMPLES, MIN_SAMPLES
from firmsift.entrypoints.http.contract.batches import BatchCounts, Count
from firmsift.entrypoints.http.contract.body import Body


class TokensPerDomain(Body):
    """The tokens one LLM question is expected to take."""

    tokens_in: Count
    tokens_out: Count


class LlmEstimate(Body):
    """The LLM questions the batch would ask: their tokens, price and wall time."""

    model: str = Field(description="FIRMSIFT_LLM_MODEL")
    tokens_in: Count = Field(description="to_ask × tokens_per_domain.tokens_in")
    tokens_out: Count = Field(description="to_ask × tokens_per_domain.tokens_out")
    tokens_per_domain: TokensPerDomain
    tokens_basis: str = Field(description=(
        f"where tokens_per_domain comes from: the average of the classifier's stored LLM answers once at least "
        f"{MIN_SAMPLES} report tokens, else the prompt's length with typical evidence (4 characters a token) and "
        "a typical answer"))
    cost_usd: float | None = Field(ge=0, description=(
        "the tokens at the model's price; null when unknown (never 0 for unknown)"))
    cost: str = Field(description="\"known\", or \"unknown: …\" saying why")
    concurrency: Count = Field(description="FIRMSIFT_LLM_CONCURRENCY: LLM calls at once per worker")
    requests_per_minute: float | None = Field(ge=0, description=(
        "FIRMSIFT_LLM_REQUESTS_PER_MINUTE per worker; null: no limit"))
    domains_at_once: Count = Field(description=(
        "domains one worker works on at once: FIRMSIFT_WORKER_JOBS × the smaller of FIRMSIFT_DOMAIN_CONCURRENCY "
        "and FIRMSIFT_MAX_DOMAINS_PER_JOB"))
    wall_time_seconds: float | None = Field(ge=0, description=(
        f"seconds one worker should take to ask to_ask domains: the mean latency of the classifier's latest "
        f"{LATENCY_SAMPLES} LLM answers that stored one, by the slowest of three limits: to_ask × LLM seconds / "
        "concurrency, to_ask × (evidence + LLM seconds) / domains_at_once, to_ask / requests_per_minute; 0 with "
        "nothing to ask; null when no answer stored its latency (unknown, never 0). N workers take about 1/N of it"))
    wall_time: str = Field(description=(
        "the wall time for a person with the latencies it rests on, \"none to ask\", or \"unknown: …\" saying why"))


class BatchEstimate(BatchCounts):
    """What the batch would cost: the counts the same request without dry_run would accept, and the estimate."""

    dry_run: Literal[True]
    human_answers: Count = Field(description="answered from a person's correction (source human), no call")
    known_companies: Count = Field(description="answered from the known-companies table, no call")
    cached: Count = Field(description="a fresh stored answer of this classifier is reused")
    cached_precheck: Count = Field(description="a fresh pre-check outcome (no DNS, unreachable, parked)")
    to_precheck: Count = Field(description="new domains the pre-check looks at (0 when it is off)")
    to_ask: Count = Field(description="new domains: at most this many LLM questions")
    llm: LlmEstimate
    upper_bound: str = Field(description="why to_ask and its cost are an upper bound")
