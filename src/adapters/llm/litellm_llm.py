"""The LLM port on litellm: one chat completion per call, structured output where the provider allows it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from firmsift.adapters.llm.failures import classify, is_transient, provider_message, refuses_output_format
from firmsift.adapters.llm.failures import response_headers as _response_headers
from firmsift.adapters.llm.offline import litellm
from firmsift.adapters.llm.transport import LLM_RESPONSE_LIMITS, provider_of, reads_within_limits
from firmsift.adapters.llm.endpoint import api_base_host, missing_credentials
from firmsift.adapters.llm.output_modes import FORMAT_MEMORY, FormatMemory, OutputMode, modes_for, response_format
from firmsift.adapters.web.retry_after import retry_after_seconds
from firmsift.adapters.llm.transport import LitellmHttp
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.domain.excerpts import excerpt
from firmsift.ports.providers import Completion

__all__ = ["LiteLLM", "OutputMode", "refuses_output_format", "is_transient", "response_format"]

log = logging.getLogger(__name__)
_GRACE_SECONDS = 5.0  # slack on top of litellm's own timeout before the outer guard fires


class LiteLLM:
    """An LLM reached through litellm (any provider it supports, or an OpenAI-compatible server).

    Asks for the most constrained output format the `response_format` setting allows (`auto`:
    json_schema, then json_object with the schema, then json_object, then none) and moves to the
    next one when the provider refuses it. What was accepted is remembered per (model, API base)
    in `formats` (shared by every adapter of the process unless one is given), so a refusal costs
    one extra request per model and server, not one per call. Never retries otherwise: retry
    policy lives elsewhere. `retry_timeouts=False` marks timeouts as not retryable: a local
    server keeps working on a request its client abandoned, so a retry would only queue behind it.

    Answers are read within LLM_RESPONSE_LIMITS through an HTTP client made with the adapter
    (litellm_transport.LitellmHttp); aclose() closes it (the container does, with its other HTTP
    clients, see Container.http_clients).
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
        response_format: str = "auto",
        retry_timeouts: bool = True,
        formats: FormatMemory | None = None,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.response_format = response_format
        self.modes = modes_for(response_format)
        self.retry_timeouts = retry_timeouts
        self.host = api_base_host(api_base)
        self._formats = FORMAT_MEMORY if formats is None else formats
        self._key = (model, (api_base or "").rstrip("/"))
        self._provider = provider_of(model, api_base)
        self._http = LitellmHttp()
        if not reads_within_limits(self._provider):
            log.warning("litellm reads this provider's answers without a size limit; firmsift bounds them "
                        "(%s bytes) only for the providers it has checked (README, Untrusted content)",
                        f"{LLM_RESPONSE_LIMITS.max_bytes:,}", extra={"model": model})
        self._credentials_checked = False

    async def aclose(self) -> None:
        """Close the HTTP client the adapter reads answers through (its connections on this loop)."""
        await self._http.aclose()

    def __repr__(self) -> str:  # the key stays out of reprs, logs and tracebacks
        return f"LiteLLM(model={self.model!r}, api_base={self.api_base!r}, mode={self.mode.name})"

    @property
    def mode(self) -> OutputMode:
        """The output mode the next call starts with."""
        first, last = self.modes
        remembered = self._formats.get(self._key)
        return first if remembered is None else min(max(first, remembered), last)

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        """One answer, as JSON matching json_schema where the provider supports it. The request is
        repeated only when the provider refuses the output-format option, with the next mode.

        Raises ProviderError for missing credentials (before any request), transport errors,
        timeouts, refusals, cut-off or empty answers; its message names the cause.
        """
        self._check_credentials()
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        mode = self.mode
        while True:
            try:
                response = await self._request(messages, response_format(mode, json_schema))
            except ProviderError:
                raise
            except Exception as exc:  # litellm raises many types; each becomes one ProviderError
                if refuses_output_format(exc) and mode < self.modes[1]:
                    following = OutputMode(mode + 1)
                    self._remember(mode, following, exc)
                    mode = following
                    continue
                raise self._failure(exc, mode) from None  # from None: the cause may quote the key
            return self._completion(response)

    def _check_credentials(self) -> None:
        if self._credentials_checked:
            return
        missing = missing_credentials(self.model, api_base=self.api_base, api_key=self._api_key)
        if missing:
            raise ProviderError(missing, cause=FailureCause.MISSING_CREDENTIALS)
        self._credentials_checked = True

    def _remember(self, refused: OutputMode, following: OutputMode, exc: Exception) -> None:
        if self._formats.advance(self._key, following):
            log.warning("the LLM refused a response format; using the next one from now on", extra={
                "model": self.model, "api_base_host": self.host, "refused": refused.label,
                "using": following.label, "reason": excerpt(self._scrub(provider_message(exc)), 200)})

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
        client = self._http.client_for(self._provider)  # None: litellm's OpenAI client, bounded too
        if client is not None:
            options["client"] = client
        try:
            async with asyncio.timeout(self.timeout + _GRACE_SECONDS):
                return await litellm.acompletion(**options)
        except TimeoutError:
            raise self._timed_out() from None

    def _failure(self, exc: Exception, mode: OutputMode) -> ProviderError:
        cause, sentence = classify(exc, self.host or "the provider", self._scrub)
        if cause is FailureCause.TIMEOUT:
            return self._timed_out()
        if cause is FailureCause.FORMAT_REFUSED:
            sentence = (f"the provider refused response_format {mode.label} "
                        f"(FIRMSIFT_LLM_RESPONSE_FORMAT={self.response_format}): {sentence}")
        # A refused format comes back refused (llama-cpp-python's 500 included): never retried.
        transient = cause is not FailureCause.FORMAT_REFUSED and is_transient(exc)
        wait = retry_after_seconds(_response_headers(exc)) if transient else None
        return ProviderError(f"{self._where()}: {sentence}", retryable=transient, retry_after=wait,
                             cause=cause)

    def _timed_out(self) -> ProviderError:
        note = "" if self.retry_timeouts else "; not retried, a local server would still be busy with it"
        return ProviderError(f"{self._where()}: timed out, no answer within {self.timeout:g}s{note}",
                             retryable=self.retry_timeouts, cause=FailureCause.TIMEOUT)

    def _completion(self, response: Any) -> Completion:
        where = self._where()
        # An answer that came back is billed even when it cannot be used: its errors say what for.
        billed = _usage(getattr(response, "usage", None))
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ProviderError(f"{where}: the provider returned no choices", cause=FailureCause.UNREADABLE_RESPONSE,
                                **billed)
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        finish_reason = getattr(choice, "finish_reason", None)
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise ProviderError(f"{where}: the model refused to answer: {excerpt(self._scrub(str(refusal)), 300)}",
                                cause=FailureCause.MODEL_REFUSED, **billed)
        if finish_reason == "content_filter":
            raise ProviderError(f"{where}: the provider's content filter withheld the answer",
                                cause=FailureCause.CONTENT_FILTER, **billed)
        if finish_reason == "length":
            start = f"; it began: {excerpt(content, 120)}" if isinstance(content, str) and content.strip() else ""
            raise ProviderError(f"{where}: the answer was cut off at max_tokens={self.max_tokens} "
                                f"(finish_reason=length; raise FIRMSIFT_LLM_MAX_TOKENS){start}",
                                cause=FailureCause.CUT_OFF, **billed)
        if not isinstance(content, str) or not content.strip():
            raise ProviderError(f"{where}: the provider returned an empty answer",
                                cause=FailureCause.UNREADABLE_RESPONSE, **billed)
        model = getattr(response, "model", None) or self.model
        return Completion(text=content, model=model, finish_reason=finish_reason, **billed)

    def _where(self) -> str:
        return f"{self.model} at {self.host}" if self.host else self.model

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "[redacted]")
        return text


def _usage(usage: object) -> dict[str, int | None]:
    """The tokens the provider reported. litellm puts a usage of zeros in a response whose
    provider sent none; every prompt firmsift sends has tokens, so 0 prompt tokens means "not
    reported", never "free"."""
    prompt_tokens = _count(getattr(usage, "prompt_tokens", None))
    if not prompt_tokens:
        return {"prompt_tokens": None, "completion_tokens": None}
    return {"prompt_tokens": prompt_tokens, "completion_tokens": _count(getattr(usage, "completion_tokens", None))}


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
