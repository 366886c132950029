"""Reading a chat completion into the LLM port's Completion, as both LLM adapters do: litellm's
response object or the JSON an OpenAI-compatible server sent, the same rules for each."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from firmsift.adapters.web.bounded_body import BodyLimits
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.domain.excerpts import excerpt
from firmsift.domain.rate_limit_headers import read_rate_limit_headers
from firmsift.ports.providers import Completion

# An answer holds at most max_tokens of text (a few KB); 4 MB leaves room for any honest one.
LLM_RESPONSE_LIMITS = BodyLimits(max_bytes=4_000_000)


def read_answer(response: Any, headers: Mapping[str, str] | None, *, where: str, model: str, max_tokens: int,
                scrub: Callable[[str], str]) -> Completion:
    """The answer in `response` (an object with attributes, or the decoded JSON), with the tokens
    it billed and the rate limits its `headers` announced. `where` names the model and server in
    errors, `model` stands in for a response that names none, `scrub` removes secrets.

    Raises ProviderError for a response with no choices, a refusal, a content filter, an answer
    cut off at max_tokens or an empty one; an answer that came back is billed even when it
    cannot be used, so each error carries the tokens the provider reported.
    """
    billed: dict[str, Any] = {**usage_tokens(_field(response, "usage")),
                              "rate_limits": read_rate_limit_headers(headers)}
    choices = _field(response, "choices")
    if not choices or not isinstance(choices, (list, tuple)):
        raise ProviderError(f"{where}: the provider returned no choices", cause=FailureCause.UNREADABLE_RESPONSE,
                            **billed)
    choice = choices[0]
    message = _field(choice, "message")
    content = _field(message, "content")
    finish_reason = _field(choice, "finish_reason")
    refusal = _field(message, "refusal")
    if refusal:
        raise ProviderError(f"{where}: the model refused to answer: {excerpt(scrub(str(refusal)), 300)}",
                            cause=FailureCause.MODEL_REFUSED, **billed)
    if finish_reason == "content_filter":
        raise ProviderError(f"{where}: the provider's content filter withheld the answer",
                            cause=FailureCause.CONTENT_FILTER, **billed)
    if finish_reason == "length":
        start = f"; it began: {excerpt(content, 120)}" if isinstance(content, str) and content.strip() else ""
        raise ProviderError(f"{where}: the answer was cut off at max_tokens={max_tokens} "
                            f"(finish_reason=length; raise FIRMSIFT_LLM_MAX_TOKENS){start}",
                            cause=FailureCause.CUT_OFF, **billed)
    if not isinstance(content, str) or not content.strip():
        raise ProviderError(f"{where}: the provider returned an empty answer",
                            cause=FailureCause.UNREADABLE_RESPONSE, **billed)
    named = _field(response, "model")
    return Completion(text=content, model=named if isinstance(named, str) and named else model,
                      finish_reason=finish_reason, **billed)


def usage_tokens(usage: object) -> dict[str, int | None]:
    """The tokens the provider reported. litellm puts a usage of zeros in a response whose
    provider sent none; every prompt firmsift sends has tokens, so 0 prompt tokens means "not
    reported", never "free"."""
    prompt_tokens = _count(_field(usage, "prompt_tokens"))
    if not prompt_tokens:
        return {"prompt_tokens": None, "completion_tokens": None}
    return {"prompt_tokens": prompt_tokens, "completion_tokens": _count(_field(usage, "completion_tokens"))}


def _field(holder: object, name: str) -> Any:
    """`name` of a JSON object (a dict) or of a response object (an attribute); None if absent."""
    if isinstance(holder, dict):
        return holder.get(name)
    return getattr(holder, name, None) if holder is not None else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
