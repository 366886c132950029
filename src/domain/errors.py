"""Domain errors. Entrypoints map them to HTTP statuses and CLI exit codes in one place."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from firmsift.domain.rate_limit_headers import RateLimitHeaders


class FirmsiftError(Exception):
    """Base of every error the domain raises on purpose."""

    code = "error"


@dataclass(frozen=True)
class Rejection:
    """One offending input value and why it was refused."""

    value: object
    reason: str


class InvalidRequest(FirmsiftError):
    """The request as a whole is malformed; `rejections` lists each offending value."""

    code = "invalid_request"

    def __init__(self, message: str, rejections: tuple[Rejection, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.rejections = rejections


class InvalidDomains(InvalidRequest):
    code = "invalid_domains"


class TooManyDomains(InvalidRequest):
    code = "too_many_domains"


class UnknownClassifier(FirmsiftError):
    code = "unknown_classifier"

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown classifier {name!r}; known: {', '.join(known) or 'none'}")
        self.name = name
        self.known = known


class JobNotFound(FirmsiftError):
    code = "job_not_found"

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no job with id {job_id!r}")
        self.job_id = job_id


class StaleReceipt(FirmsiftError):
    """A queue receipt is no longer the current one for its message (expired or superseded)."""

    code = "stale_receipt"


class FailureCause(str, enum.Enum):
    """Why a provider call failed, in a word: what retry summaries and `firmsift llm check` name."""

    MISSING_CREDENTIALS = "missing credentials"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    FORMAT_REFUSED = "format refused"
    RATE_LIMITED = "rate limited"
    CONTENT_FILTER = "content filter"
    CUT_OFF = "cut off"
    MODEL_REFUSED = "model refused"
    CREDENTIALS_REFUSED = "credentials refused"
    NOT_FOUND = "not found"
    PROMPT_TOO_LONG = "prompt too long"
    PROVIDER_ERROR = "provider error"
    UNREADABLE_RESPONSE = "unreadable response"
    REJECTED = "request rejected"
    OTHER = "other"


class ProviderError(FirmsiftError):
    """An LLM or search provider failed for one domain; the job carries on.

    `retryable` says whether the same call may succeed if tried again later (the provider was
    busy, slow, unreachable or failed on its side), as opposed to a refusal or an answer that
    would come back the same. `retry_after` is the wait in seconds the provider asked for, if any.
    `cause` names the kind of failure in a word (FailureCause). `prompt_tokens` and
    `completion_tokens` are what the provider billed for an answer it did return but that could
    not be used (cut off, filtered, refused, empty), as it reported them; None otherwise.
    `rate_limits` is what the provider's headers said of its limits (a 429's), if anything.
    """

    code = "provider_error"

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None,
                 cause: FailureCause = FailureCause.OTHER, prompt_tokens: int | None = None,
                 completion_tokens: int | None = None, rate_limits: RateLimitHeaders | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.cause = cause
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.rate_limits = rate_limits
