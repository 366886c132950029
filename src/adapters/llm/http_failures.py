"""What a failed call of the direct OpenAI-compatible client means: an HTTP status and the
provider's words, a body that could not be read, or a transport failure, each as the cause,
a sentence naming it and whether to retry, the way failures.py reads litellm's exceptions of the
same provider (litellm's OpenAI exception mapping: status first, a few OpenAI phrases before it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

import httpx

from firmsift.adapters.llm.failure_signs import (
    DETAIL_LIMIT,
    REFUSAL_STATUSES,
    chain,
    caused_by,
    names_the_format,
    says_content_policy,
    says_prompt_too_long,
    transport_failure,
    transport_sentence,
)
from firmsift.adapters.llm.laddered_llm import Failure
from firmsift.adapters.web.bounded_body import UnreadableBody
from firmsift.domain.errors import FailureCause
from firmsift.domain.excerpts import excerpt

_RATE_LIMIT = re.compile(r"rate[\s_\-]*limit")
# The exception names litellm gives each status (quoted in the sentence, as the litellm adapter does).
_NAMES = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError", 404: "NotFoundError",
          408: "Timeout", 422: "UnprocessableEntityError", 429: "RateLimitError", 500: "InternalServerError",
          502: "BadGatewayError", 503: "ServiceUnavailableError", 504: "Timeout"}


class StatusFailure(Exception):
    """The provider answered with an error: its status, its own words and its headers. An error
    object in a 200 answer is read as a 400 whose status was not sent (`sent_status` False)."""

    def __init__(self, status: int, words: str, headers: Mapping[str, str] | None, *, body: str = "",
                 sent_status: bool = True) -> None:
        super().__init__(f"HTTP {status}: {words}")
        self.status = status
        self.words = words
        self.body = body  # the whole body's text: the error's type and code are phrases too
        self.headers = headers
        self.sent_status = sent_status


class UnreadableAnswer(Exception):
    """The provider answered 2xx with a body that is not a chat completion's JSON object."""


def provider_words(body: bytes) -> str:
    """The provider's message in an error body: OpenAI's, vLLM's and llama.cpp's
    `{"error": {"message": ...}}`, LM Studio's `{"error": "<text>"}`, FastAPI's `{"detail": ...}`,
    else the body's text itself."""
    text = body.decode("utf-8", "replace").strip()
    try:
        document = json.loads(text)
    except ValueError:
        return text
    return error_words(document) or text


def error_words(document: object) -> str | None:
    """The message of an error object in a decoded body, or None when it holds none."""
    if not isinstance(document, dict):
        return None
    inner = document.get("error", document.get("detail"))
    if isinstance(inner, dict):
        inner = inner.get("message") or inner
    if isinstance(inner, str):
        return inner.strip() or None
    return json.dumps(inner, default=str) if inner else None


def refuses_format(exc: Exception) -> bool:
    """True when the provider refused the response_format option rather than the request:
    recognised by its words whatever the status among 400, 422, 500 and 501 (llama-cpp-python
    answers 500), never for a prompt too long, a policy refusal, a rate limit or credentials."""
    return isinstance(exc, StatusFailure) and _status_cause(exc)[0] is FailureCause.FORMAT_REFUSED


def explain(exc: Exception, where: str, scrub: Callable[[str], str] = str) -> Failure:
    """What the direct client's exception `exc` means, for a call to the provider at `where` (a
    host); `scrub` removes secrets from the provider's words before they are shortened."""
    if caused_by(exc, (TimeoutError, httpx.TimeoutException)):
        return Failure(FailureCause.TIMEOUT, "timed out (timeout)", True)
    refused = next((link for link in chain(exc) if isinstance(link, UnreadableBody)), None)
    if refused is not None:
        return Failure(FailureCause.UNREADABLE_RESPONSE, f"the provider answered {refused}; it was not read", False)
    transport = transport_failure(exc)
    if transport is not None:
        return Failure(FailureCause.UNREACHABLE, transport_sentence(exc, where), transport is not FailureCause.REJECTED)
    if isinstance(exc, UnreadableAnswer):
        return Failure(FailureCause.UNREADABLE_RESPONSE,
                       f"the provider sent a response that could not be read: {excerpt(scrub(str(exc)), DETAIL_LIMIT)}",
                       False)
    if isinstance(exc, StatusFailure):
        cause, what, transient = _status_cause(exc)
        code = f"HTTP {exc.status}, " if exc.sent_status else ""
        name = _NAMES.get(exc.status, "APIError")
        detail = excerpt(scrub(exc.words), DETAIL_LIMIT)
        return Failure(cause, f"{what} ({code}{name}): {detail}", transient, exc.headers)
    return Failure(FailureCause.OTHER, f"the call failed ({type(exc).__name__}): "
                   f"{excerpt(scrub(str(exc)), DETAIL_LIMIT)}", False)


def _status_cause(exc: StatusFailure) -> tuple[FailureCause, str, bool]:
    """(cause, what happened, transient) for an error answer, in the order litellm tells them apart."""
    status, words, said = exc.status, exc.words, f"{exc.words}\n{exc.body}"
    if status == 429 or _RATE_LIMIT.search(words.lower()):
        return FailureCause.RATE_LIMITED, "rate limited by the provider", True
    if says_prompt_too_long(said):
        return FailureCause.PROMPT_TOO_LONG, "the prompt is too long for the model", False
    if says_content_policy(said):
        return FailureCause.CONTENT_FILTER, "the provider's content policy refused the request", False
    if status in (401, 403):
        return FailureCause.CREDENTIALS_REFUSED, "the provider refused the credentials", False
    if status == 404 or ("invalid_request_error" in said and "model_not_found" in said):
        return FailureCause.NOT_FOUND, "the model or endpoint was not found", False
    if status in (408, 504):  # litellm reads both as its Timeout
        return FailureCause.TIMEOUT, "timed out (timeout)", True
    if status in REFUSAL_STATUSES and names_the_format(words):
        return FailureCause.FORMAT_REFUSED, "the provider refused the response format", False
    if status in (400, 422):
        return FailureCause.REJECTED, "the provider rejected the request", False
    if status >= 500:
        return FailureCause.PROVIDER_ERROR, "the provider failed", True
    return FailureCause.OTHER, "the call failed", False
