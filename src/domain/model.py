"""Domain types: jobs, per-domain results, verdicts, evidence, classifiers and their statuses."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from firmsift.domain.budgets import JobPause
from firmsift.domain.rate_limit_headers import RateLimitHeaders


class JobStatus(str, enum.Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"

    @property
    def finished(self) -> bool:
        """DONE or FAILED: the caller has been (or is being) told, so the job's results are final
        until an explicit redrive puts it back to PENDING."""
        return self in (JobStatus.DONE, JobStatus.FAILED)


UNFINISHED_STATUSES = (JobStatus.PENDING, JobStatus.RUNNING)


class ResultStatus(str, enum.Enum):
    PENDING = "PENDING"
    DONE = "DONE"
    FAILED = "FAILED"


class Source(str, enum.Enum):
    """Which path produced an answer, cheapest first."""

    HUMAN = "human"  # a person's correction of this (domain, classifier): beats every other path
    KNOWN_COMPANY = "known_company"
    CACHE = "cache"
    PRECHECK = "precheck"  # the pre-check found no company to ask about (no DNS, unreachable, parked)
    LLM = "llm"


class QuoteStatus(str, enum.Enum):
    """Whether an LLM answer's quote was found in the evidence sent with the question (quotes.py).
    Only VERIFIED lets an answer keep a confidence above 2."""

    VERIFIED = "verified"  # found, normalised, in the evidence text the prompt carried
    UNVERIFIED = "unverified"  # given, but not found there (or too short or too long to count)
    NO_QUOTE = "no_quote"  # evidence was sent, and the model gave no quote
    NO_EVIDENCE = "no_evidence"  # nothing was sent to quote from, and the model gave no quote


@dataclass(frozen=True)
class Evidence:
    """One piece of (untrusted) web evidence: where it came from and what it said."""

    url: str
    title: str = ""
    snippet: str = ""
    # The search provider that found it, as a search chain marks it on the way to the answer;
    # the stored answer keeps it as `search_provider`, not per item (None: not marked).
    provider: str | None = None


@dataclass(frozen=True)
class Completion:
    """One LLM answer as the provider gave it."""

    text: str
    model: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None  # as the provider reported them (None: not reported)
    completion_tokens: int | None = None
    rate_limits: RateLimitHeaders | None = None  # what the provider's headers said of its limits


@dataclass(frozen=True)
class Classifier:
    """A yes/no question, declared as data (see src/classifiers/*.toml)."""

    name: str
    question: str
    answer_field: str
    definition: str
    system_prompt: str
    user_prompt: str
    prompt_version: str
    # The known-companies table lists CPG companies: only a classifier that says so answers
    # "yes, 5" for them; any other question is asked as usual.
    uses_known_companies: bool = False


@dataclass(frozen=True)
class Answer:
    """The stored answer for one (domain, classifier): the cache entry."""

    domain: str
    classifier: str
    status: ResultStatus
    answered_at: datetime
    source: Source
    answer: bool | None = None
    confidence: int | None = None
    reason: str = ""
    evidence: tuple[Evidence, ...] = ()
    error: str | None = None
    raw_output: str | None = None
    evidence_status: str | None = None  # how the search went; None where none was needed
    search_provider: str | None = None  # whose evidence the answer rests on; None where it used none
    model: str | None = None
    prompt_version: str | None = None
    quote: str | None = None  # the model's quote from the evidence, as written (cut to MAX_QUOTE_CHARS)
    quote_status: QuoteStatus | None = None  # None where no LLM answered (or answered before quotes)
    # The LLM call this answer was read from, as billed: tokens as the provider reported them and
    # their price in US dollars. None: not reported, price unknown, or stored before costs were.
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    site_status: str | None = None  # the pre-check's SiteStatus value; None where no pre-check ran
    redirected_to: str | None = None  # where a `redirected` domain leads (its registrable domain)
    redirected_answer: bool | None = None  # the target's fresh answer when it had one, else None
    # Evidence taken from another classifier's recent answer instead of searching again: that
    # classifier's name and when the search that found it ran. None: searched for this answer.
    evidence_reused_from: str | None = None
    evidence_searched_at: datetime | None = None
    # How long the answer took, in seconds: its LLM call (from taking an LLM slot to the answer,
    # retries and rate-budget waits included) and the gathering of its evidence (a search, or the
    # look-up of reused evidence). None: not measured (another path, or stored before migration 11).
    llm_seconds: float | None = None
    evidence_seconds: float | None = None


@dataclass(frozen=True)
class DomainResult:
    """One domain's outcome within a job (what GET /domains/classify/{id} shows)."""

    domain: str
    status: ResultStatus = ResultStatus.PENDING
    answer: bool | None = None
    confidence: int | None = None
    reason: str = ""
    source: Source | None = None
    evidence: tuple[Evidence, ...] = ()
    error: str | None = None
    evidence_status: str | None = None
    search_provider: str | None = None
    quote: str | None = None
    quote_status: QuoteStatus | None = None
    # What this job spent on the domain: the LLM call it made, or 0 when it reused an answer (a
    # known company, the cache, a call another job made). None: unknown, or not finished yet.
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    # The answer's own LLM call (a cached answer's original one); None where no LLM answered.
    answer_tokens_in: int | None = None
    answer_tokens_out: int | None = None
    answer_cost_usd: float | None = None
    site_status: str | None = None
    redirected_to: str | None = None
    redirected_answer: bool | None = None
    evidence_reused_from: str | None = None
    evidence_searched_at: datetime | None = None

    @classmethod
    def from_answer(cls, answer: Answer, source: Source, *, paid: bool | None = None) -> DomainResult:
        """The result an answer gives a job. `paid`: this job made (and pays for) the answer's LLM
        call; by default, when the source is the LLM."""
        paid = source is Source.LLM if paid is None else paid
        return cls(
            domain=answer.domain,
            status=answer.status,
            answer=answer.answer,
            confidence=answer.confidence,
            reason=answer.reason,
            source=source,
            evidence=answer.evidence,
            error=answer.error,
            evidence_status=answer.evidence_status,
            search_provider=answer.search_provider,
            quote=answer.quote,
            quote_status=answer.quote_status,
            tokens_in=answer.tokens_in if paid else 0,
            tokens_out=answer.tokens_out if paid else 0,
            cost_usd=answer.cost_usd if paid else 0.0,
            answer_tokens_in=answer.tokens_in,
            answer_tokens_out=answer.tokens_out,
            answer_cost_usd=answer.cost_usd,
            site_status=answer.site_status,
            redirected_to=answer.redirected_to,
            redirected_answer=answer.redirected_answer,
            evidence_reused_from=answer.evidence_reused_from,
            evidence_searched_at=answer.evidence_searched_at,
        )


@dataclass(frozen=True)
class Job:
    id: str
    classifier: str
    status: JobStatus
    created_at: datetime
    domains: tuple[str, ...]
    reply_queue: str | None = None
    results: tuple[DomainResult, ...] = field(default=())
    error: str | None = None
    reply_error: str | None = None
    reply_sent: bool = False
    owner: str = ""  # the id of the API key that submitted it; '' when authentication is off
    idempotency_key: str | None = None  # the submitter's Idempotency-Key header, unique per owner
    pause: JobPause | None = None  # why the worker paused the job (a spend limit); None unless PENDING because of it

    def result_for(self, domain: str) -> DomainResult:
        for result in self.results:
            if result.domain == domain:
                return result
        return DomainResult(domain=domain)


@dataclass(frozen=True)
class KnownCompany:
    domain: str
    name: str = ""
