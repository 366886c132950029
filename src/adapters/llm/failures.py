"""What a litellm exception means: its cause in a word, whether to retry, and a message naming the cause.

litellm labels failures that never reached a provider as "HTTP 500" (a refused connection, a DNS
failure, missing credentials), so a status code is reported only when the provider really
answered: when the exception carries the provider's response headers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx  # litellm's own transport; its errors name transport failures too
import openai  # litellm's own dependency; its exception types name transport failures

from firmsift.adapters.web.bounded_body import UnreadableBody
from firmsift.adapters.llm.failure_signs import (
    DETAIL_LIMIT,
    REFUSAL_STATUSES,
    caused_by,
    chain,
    names_the_format,
    transport_failure,
    transport_sentence,
)
from firmsift.adapters.llm.offline import litellm
from firmsift.domain.errors import FailureCause
from firmsift.domain.excerpts import excerpt

_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*)?(?:\w+Error:\s*)?(?:\w+Exception\s*-\s*)?")
_BARE_STATUS = re.compile(r"Error code: \d+")
__all__ = ["DETAIL_LIMIT", "answered", "classify", "is_transient", "provider_message", "refuses_output_format",
           "response_headers"]


def refuses_output_format(exc: Exception) -> bool:
    """True when the provider refused the response_format option rather than the request itself.

    Recognised by what the provider says, whatever the status (llama-cpp-python answers 500):
    a prompt too long, a policy refusal, a rate limit or a transport failure never counts, so
    they cannot downgrade the mode for every later call.
    """
    if isinstance(exc, litellm.UnsupportedParamsError):
        return True
    if isinstance(exc, (litellm.ContextWindowExceededError, litellm.ContentPolicyViolationError,
                        litellm.RateLimitError, litellm.AuthenticationError, litellm.PermissionDeniedError,
                        litellm.Timeout)):
        return False
    if _transport_failure(exc) is not None or getattr(exc, "status_code", None) not in REFUSAL_STATUSES:
        return False
    return names_the_format(provider_message(exc))


def is_transient(exc: Exception) -> bool:
    """True when the same request may succeed later: it timed out, the provider could not be
    reached, limited the rate (429), timed the request out (408) or failed on its side (5xx).

    A TLS failure is not transient (a certificate does not fix itself). litellm also reports a
    body it could not read as an HTTP 500 although the provider answered 200: that is not
    transient either (the same answer would come back); it carries none of the provider's headers.
    Nor is a body refused by our limits (a compression bomb, an endless answer), whatever the
    client wrapped it in.
    """
    if caused_by(exc, (UnreadableBody,)):
        return False
    transport = _transport_failure(exc)
    if transport is not None:
        return transport is not FailureCause.REJECTED
    if caused_by(exc, (json.JSONDecodeError,)):
        return False
    status = getattr(exc, "status_code", None)
    if isinstance(exc, litellm.RateLimitError) or status in (408, 429):
        return True
    return isinstance(status, int) and status >= 500 and answered(exc)


def classify(exc: Exception, where: str, scrub: Callable[[str], str] = str) -> tuple[FailureCause, str]:
    """(the cause, a sentence naming it) for a failed call to the provider at `where` (a host).
    `scrub` removes secrets from the provider's words before they are shortened."""
    if isinstance(exc, litellm.Timeout) or caused_by(exc, (TimeoutError, httpx.TimeoutException)):
        return FailureCause.TIMEOUT, "timed out (timeout)"
    refused = next((link for link in chain(exc) if isinstance(link, UnreadableBody)), None)
    if refused is not None:
        return FailureCause.UNREADABLE_RESPONSE, f"the provider answered {refused}; it was not read"
    transport = _transport_failure(exc)
    if transport is not None:
        return FailureCause.UNREACHABLE, transport_sentence(exc, where)
    detail = excerpt(scrub(provider_message(exc)), DETAIL_LIMIT)
    status = getattr(exc, "status_code", None)
    code = f"HTTP {status}, " if isinstance(status, int) and answered(exc) else ""
    cause, what = _provider_cause(exc, status)
    if cause is FailureCause.UNREADABLE_RESPONSE:
        code = ""
    return cause, f"{what} ({code}{type(exc).__name__}): {detail}"


def _provider_cause(exc: Exception, status: object) -> tuple[FailureCause, str]:
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)) or status in (401, 403):
        return FailureCause.CREDENTIALS_REFUSED, "the provider refused the credentials"
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return FailureCause.RATE_LIMITED, "rate limited by the provider"
    if isinstance(exc, litellm.ContentPolicyViolationError):
        return FailureCause.CONTENT_FILTER, "the provider's content policy refused the request"
    if isinstance(exc, litellm.ContextWindowExceededError):
        return FailureCause.PROMPT_TOO_LONG, "the prompt is too long for the model"
    if isinstance(exc, litellm.NotFoundError) or status == 404:
        return FailureCause.NOT_FOUND, "the model or endpoint was not found"
    if refuses_output_format(exc):
        return FailureCause.FORMAT_REFUSED, "the provider refused the response format"
    if isinstance(exc, litellm.BadRequestError) or status in (400, 422):
        return FailureCause.REJECTED, "the provider rejected the request"
    if isinstance(status, int) and status >= 500:
        if answered(exc) and not caused_by(exc, (json.JSONDecodeError,)):
            return FailureCause.PROVIDER_ERROR, "the provider failed"
        return FailureCause.UNREADABLE_RESPONSE, "the provider sent a response that could not be read"
    return FailureCause.OTHER, "the call failed"


def provider_message(exc: Exception) -> str:
    """The provider's own words, without litellm's "litellm.X: X: OpenAIException - " prefixes.

    An error body the OpenAI client could not read a message from (LM Studio sends
    `{"error": "<text>"}`) leaves only "Error code: 400" in the message: the body is used then.
    """
    text = str(getattr(exc, "message", None) or exc)
    text = _LITELLM_PREFIX.sub("", text, count=1).strip() or text
    body = _error_body(exc)
    if body and body not in text:
        text = body if _BARE_STATUS.fullmatch(text) else f"{text} - {body}"
    return text


def _error_body(exc: BaseException) -> str | None:
    for link in chain(exc):
        body = getattr(link, "body", None)
        if isinstance(body, dict):
            inner = body.get("error", body)
            body = inner.get("message") if isinstance(inner, dict) and inner.get("message") else inner
        if isinstance(body, str) and body.strip():
            return body.strip()
        if body:
            return json.dumps(body, default=str)
    return None


def answered(exc: Exception) -> bool:
    """True when the provider sent an HTTP response: litellm keeps its headers on the exception.
    A status litellm made up for a failure that never reached the provider comes without them."""
    return bool(response_headers(exc)) and _transport_failure(exc) is None


def response_headers(exc: Exception) -> Any:
    """The provider's response headers kept on a litellm exception (httpx.Headers), or None."""
    try:
        headers = getattr(exc, "litellm_response_headers", None)
        if not headers:
            # litellm builds a stand-in httpx.Response (no headers) for failures without one.
            headers = getattr(getattr(exc, "response", None), "headers", None)
        return headers or None
    except Exception:  # noqa: BLE001 - a half-built exception must not hide the provider's error
        return None


def _transport_failure(exc: BaseException) -> FailureCause | None:
    """transport_failure, with the OpenAI client's connection error counted (litellm wraps it)."""
    return transport_failure(exc, (openai.APIConnectionError,))
