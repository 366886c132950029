"""One domain's result in a job: the answer, the evidence it rests on, and what it cost (also in
docs/reference/jobs.md: What an answer costs)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from firmsift.domain.model import QuoteStatus, Source
from firmsift.domain.quotes import MAX_QUOTE_CHARS
from firmsift.domain.site_status import SiteStatus
from firmsift.entrypoints.http.contract.body import Body

SourceName = Literal[(*(source.value for source in Source), None)]  # type: ignore[valid-type]
QuoteStatusName = Literal[(*(status.value for status in QuoteStatus), None)]  # type: ignore[valid-type]
SiteStatusName = Literal[(*(status.value for status in SiteStatus), None)]  # type: ignore[valid-type]
Tokens = int | None  # a count of tokens (ge=0), or null when unknown


class Evidence(Body):
    """A page the answer rests on (untrusted)."""

    url: str
    title: str


class Result(Body):
    """One domain of a job: PENDING until a worker finished it."""

    domain: str
    status: Literal["PENDING", "DONE", "FAILED"]
    answer: bool | None
    confidence: int | None = Field(ge=1, le=5)
    reason: str
    source: SourceName
    evidence: list[Evidence]
    evidence_status: str | None = Field(description=(
        "how the search for evidence went: `found`, `none: the search found nothing` or `none: <why it failed>`; "
        "null where no search ran (known company, pending)"))
    search_provider: str | None = Field(description=(
        "the search provider whose evidence the answer used (`homepage`, `searxng`, `tavily` or `brave`: the first "
        "of a chain that found useful evidence); null where it used none (no search, nothing found, every provider "
        "failed) or was answered before it was recorded"))
    evidence_reused_from: str | None = Field(description=(
        "the classifier whose recent answer for this domain lent its evidence (stored, as sent then) instead of a "
        "new search, within FIRMSIFT_EVIDENCE_REUSE_DAYS; `evidence_status` and `search_provider` are that "
        "search's; null where the evidence was searched for this answer, or no search ran"))
    evidence_searched_at: datetime | None = Field(description=(
        "for reused evidence: when the search that found it ran; null otherwise"))
    quote: str | None = Field(max_length=MAX_QUOTE_CHARS, description=(
        f"the passage of the evidence the model quoted for its answer (untrusted text, cut to {MAX_QUOTE_CHARS} "
        "characters); null when it gave none or no LLM answered"))
    quote_status: QuoteStatusName = Field(description=(
        "whether the quote was found in the evidence sent to the model: `verified`; `unverified` (not found, or "
        "too short or long to count), `no_quote` or `no_evidence` keep the confidence at 2 at most and the answer "
        "cached 30 days at most; null where no LLM answered (known company, pending, failed) or for answers stored "
        "before quotes"))
    site_status: SiteStatusName = Field(description=(
        "what the pre-check found before any LLM call: `live`, `no_dns`, `unreachable` or `parked` (these three "
        "end the domain with answer null, source `precheck`, and the reason), `blocked` (a bot wall: evidence "
        "comes from the next search provider), `redirected` (to another site, named in `redirected_to`), "
        "`unknown` (the DNS lookup failed: nothing concluded, the LLM is asked); null where no pre-check ran "
        "(known company, pre-check off, answers stored before it)"))
    redirected_to: str | None = Field(description="for `redirected`: the registrable domain the homepage leads to")
    redirected_answer: bool | None = Field(description=(
        "for `redirected`: the fresh answer the target already had for this classifier (reused as this domain's "
        "answer only when the operator turned that on); null when it had none"))
    error: str | None
    tokens_in: Tokens = Field(ge=0, description=(
        "prompt tokens this job was billed for the domain, as the provider reported them (every billed attempt "
        "of its LLM call); 0 when the job made no LLM call (known company, cache, or a call another job made at "
        "the same time); null when unknown: not reported, not finished, or the call failed without a response"))
    tokens_out: Tokens = Field(ge=0, description=(
        "completion tokens this job was billed for the domain; as tokens_in"))
    cost_usd: float | None = Field(ge=0, description=(
        "what this job spent on the domain in US dollars: its LLM call's tokens at the configured model's price "
        "(FIRMSIFT_LLM_INPUT_COST_PER_MILLION and _OUTPUT_, else litellm's local price map; a model on a local "
        "API base has none unless configured); 0 when it made no LLM call; null when unknown, never 0 for an "
        "unknown cost"))
    answer_tokens_in: Tokens = Field(ge=0, description=(
        "prompt tokens of the LLM call the answer was read from: for a cached answer, the call made when it was "
        "first answered; null where no LLM answered (known company) or unknown"))
    answer_tokens_out: Tokens = Field(ge=0, description=(
        "completion tokens of the answer's LLM call; as answer_tokens_in"))
    answer_cost_usd: float | None = Field(ge=0, description=(
        "what the answer's LLM call cost in US dollars when it was made (equal to cost_usd when this job made "
        "it); null where no LLM answered or the cost is unknown"))
