"""The LLM port on litellm: one chat completion per call, structured output where the provider allows it."""

from __future__ import annotations

import asyncio
import enum
import json
import re
from typing import Any

import httpx  # litellm's own transport; its errors name transport failures too
import openai  # litellm's own dependency; its exception types name transport failures

from firmsift.adapters.litellm_offline import litellm
from firmsift.adapters.retrying import retry_after_seconds
from firmsift.domain.errors import ProviderError
from firmsift.ports.providers import Completion

# Words a provider uses when it refuses the output-format option itself, not the request.
_FORMAT_WORDS = ("response_format", "response format", "json_object", "schema", "grammar", "structured output")
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")
_GRACE_SECONDS = 5.0  # slack on top of litellm's own timeout before the outer guard fires
_DETAIL_LIMIT = 300


class OutputMode(enum.IntEnum):
    """Ways to ask for JSON, from most to least constrained; a refusal moves to the next one."""

    JSON_SCHEMA = 0  # OpenAI structured outputs
    JSON_OBJECT_WITH_SCHEMA = 1  # llama.cpp's server
    JSON_OBJECT = 2  # plain JSON mode
    NONE = 3  # the prompt and the defensive parser do all the work


class LiteLLM:
    """An LLM reached through litellm (any provider it supports, or an OpenAI-compatible server).

    Remembers which structured-output mode the provider accepted, so a refusal costs one extra
    request once per adapter, not on every call. Never retries: retry policy lives elsewhere.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = 1024,
        temperature: float | None = None,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.mode = OutputMode.JSON_SCHEMA

    def __repr__(self) -> str:  # the key stays out of reprs, logs and tracebacks
        return f"LiteLLM(model={self.model!r}, api_base={self.api_base!r}, mode={self.mode.name})"

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        """One answer, as JSON matching json_schema where the provider supports it. The request is
        repeated only when the provider refuses the output-format option, with the next mode.

        Raises ProviderError for transport errors, timeouts, refusals, cut-off or empty answers.
        """
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        mode = self.mode
        while True:
            try:
                response = await self._request(messages, response_format(mode, json_schema))
            except ProviderError:
                raise
            except Exception as exc:  # litellm raises many types; each becomes one ProviderError
                if mode < OutputMode.NONE and refuses_output_format(exc):
                    mode = OutputMode(mode + 1)
                    self.mode = max(self.mode, mode)
                    continue
                transient = is_transient(exc)
                wait = retry_after_seconds(_response_headers(exc)) if transient else None
                # from None: the cause may quote the key.
                raise ProviderError(self._describe(exc), retryable=transient, retry_after=wait) from None
            return self._completion(response)

    async def _request(self, messages: list[dict[str, str]], fmt: dict[str, Any] | None) -> Any:
        options: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "timeout": self.timeout,
            "max_tokens": self.max_tokens,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": False,  # an unsupported response_format must fail loudly, not vanish
        }
        if self.api_base:
            options["api_base"] = self.api_base
        if self._api_key:
            options["api_key"] = self._api_key
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if fmt is not None:
            options["response_format"] = fmt
        try:
            async with asyncio.timeout(self.timeout + _GRACE_SECONDS):
                return await litellm.acompletion(**options)
        except TimeoutError:
            raise ProviderError(
                f"{self.model}: no answer within {self.timeout:g}s (timeout)", retryable=True
            ) from None

    def _completion(self, response: Any) -> Completion:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ProviderError(f"{self.model}: the provider returned no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        finish_reason = getattr(choice, "finish_reason", None)
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise ProviderError(f"{self.model}: the model refused to answer: {self._scrub(str(refusal))}")
        if finish_reason == "content_filter":
            raise ProviderError(f"{self.model}: the provider's content filter withheld the answer")
        if finish_reason == "length":
            raise ProviderError(
                f"{self.model}: the answer was cut off at max_tokens={self.max_tokens} (finish_reason=length)"
            )
        if not isinstance(content, str) or not content.strip():
            raise ProviderError(f"{self.model}: the provider returned an empty answer")
        model = getattr(response, "model", None) or self.model
        usage = getattr(response, "usage", None)
        return Completion(text=content, model=model, finish_reason=finish_reason,
                          prompt_tokens=_count(getattr(usage, "prompt_tokens", None)),
                          completion_tokens=_count(getattr(usage, "completion_tokens", None)))

    def _describe(self, exc: Exception) -> str:
        status = getattr(exc, "status_code", None)
        what = _kind_of_failure(exc, status)
        detail = self._scrub(str(getattr(exc, "message", None) or exc))[:_DETAIL_LIMIT]
        code = f", HTTP {status}" if isinstance(status, int) else ""
        return f"{self.model}: {what} ({type(exc).__name__}{code}): {detail}"

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "[redacted]")
        return text


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def response_format(mode: OutputMode, json_schema: dict[str, Any]) -> dict[str, Any] | None:
    """The `response_format` request field for one output mode."""
    if mode is OutputMode.JSON_SCHEMA:
        name = _SCHEMA_NAME.sub("_", str(json_schema.get("title") or "answer"))[:64]
        return {"type": "json_schema", "json_schema": {"name": name, "schema": json_schema, "strict": True}}
    if mode is OutputMode.JSON_OBJECT_WITH_SCHEMA:
        return {"type": "json_object", "schema": json_schema}
    if mode is OutputMode.JSON_OBJECT:
        return {"type": "json_object"}
    return None


def refuses_output_format(exc: Exception) -> bool:
    """True when the provider refused the response_format option rather than the request itself.

    Only a 400/422 that names the option counts: a prompt too long or a policy refusal is a
    failure of this call, and must not downgrade the mode for every later call.
    """
    if isinstance(exc, (litellm.ContextWindowExceededError, litellm.ContentPolicyViolationError)):
        return False
    if not isinstance(exc, (litellm.BadRequestError, litellm.UnprocessableEntityError)):
        return False
    text = str(getattr(exc, "message", None) or exc).lower()
    return any(word in text for word in _FORMAT_WORDS)


def is_transient(exc: Exception) -> bool:
    """True when the same request may succeed later: it timed out, the provider could not be
    reached, limited the rate (429), timed the request out (408) or failed on its side (5xx).

    litellm also reports a body it could not read as an HTTP 500, although the provider answered
    200: that is not transient (the same answer would come back). It is told apart by carrying no
    response headers of the provider's, which a real 5xx always has.
    """
    if _caused_by(exc, (openai.APIConnectionError, ConnectionError, httpx.TransportError)):
        return True  # litellm.Timeout is an APIConnectionError too
    if _caused_by(exc, (json.JSONDecodeError,)):
        return False
    status = getattr(exc, "status_code", None)
    if isinstance(exc, litellm.RateLimitError) or status in (408, 429):
        return True
    return isinstance(status, int) and status >= 500 and bool(_response_headers(exc))


def _response_headers(exc: Exception) -> Any:
    """The provider's response headers kept on a litellm exception (httpx.Headers), or None."""
    try:
        headers = getattr(exc, "litellm_response_headers", None)
        if not headers:
            headers = getattr(getattr(exc, "response", None), "headers", None)
        return headers or None
    except Exception:  # noqa: BLE001 - a half-built exception must not hide the provider's error
        return None


def _kind_of_failure(exc: Exception, status: object) -> str:
    if isinstance(exc, litellm.Timeout):
        return "timed out"
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)):
        return "the provider refused the credentials"
    if isinstance(exc, litellm.RateLimitError):
        return "rate limited by the provider"
    if isinstance(exc, litellm.ContentPolicyViolationError):
        return "the provider's content policy refused the request"
    if isinstance(exc, litellm.ContextWindowExceededError):
        return "the prompt is too long for the model"
    if isinstance(exc, litellm.NotFoundError):
        return "the model or endpoint was not found"
    if isinstance(exc, litellm.BadRequestError):
        return "the provider rejected the request"
    if _caused_by(exc, (openai.APIConnectionError, ConnectionError)):
        return "could not reach the provider"
    # litellm maps some statuses only to its generic APIError: go by the status code then.
    if status in (401, 403):
        return "the provider refused the credentials"
    if status == 429:
        return "rate limited by the provider"
    if isinstance(status, int) and status >= 500:
        return "the provider failed or sent an unreadable response"
    return "the call failed"


def _caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    """litellm re-wraps transport errors (a refused connection surfaces as an HTTP 500), so look
    down the chain of causes for the real one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
