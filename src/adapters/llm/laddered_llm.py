"""What both LLM adapters share: one chat completion per call, asked for in the most constrained
output format the provider accepts (the ladder), after a credentials check, with every failure
named, scrubbed of the key and marked retryable or not. Each adapter gives the request and what
its client's exceptions mean (litellm_llm.LiteLLM, openai_chat.OpenAIChat)."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, NamedTuple

from firmsift.adapters.llm.endpoint import api_base_host, missing_credentials
from firmsift.adapters.llm.output_modes import FORMAT_MEMORY, FormatMemory, OutputMode, modes_for, response_format
from firmsift.adapters.web.retry_after import retry_after_seconds
from firmsift.domain.errors import FailureCause, ProviderError
from firmsift.domain.excerpts import excerpt
from firmsift.domain.rate_limit_headers import read_rate_limit_headers
from firmsift.ports.providers import Completion

GRACE_SECONDS = 5.0  # slack on top of the client's own timeout before the outer guard fires


class Failure(NamedTuple):
    """What an adapter's client exception means: its cause, a sentence naming it (scrubbed),
    whether the same call may succeed later, and the provider's response headers if it answered."""

    cause: FailureCause
    sentence: str
    transient: bool
    headers: Mapping[str, str] | None = None


class LadderedLLM(ABC):
    """The LLM port over one chat-completions client.

    Asks for the most constrained output format the `response_format` setting allows (`auto`:
    json_schema, then json_object with the schema, then json_object, then none) and moves to the
    next one when the provider refuses it. What was accepted is remembered per (model, API base)
    in `formats` (shared by every adapter of the process unless one is given), so a refusal costs
    one extra request per model and server, not one per call. Never retries otherwise: retry
    policy lives elsewhere. `retry_timeouts=False` marks timeouts as not retryable: a local
    server keeps working on a request its client abandoned, so a retry would only queue behind it.
    """

    log = logging.getLogger(__name__)  # each adapter logs under its own module's name

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
        self._credentials_checked = False
        self._open()

    @abstractmethod
    def _open(self) -> None:
        """Set up the adapter's own client once the settings above are in place."""

    def __repr__(self) -> str:  # the key stays out of reprs, logs and tracebacks
        return f"{type(self).__name__}(model={self.model!r}, api_base={self.api_base!r}, mode={self.mode.name})"

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
                async with asyncio.timeout(self.timeout + GRACE_SECONDS):
                    return await self._request(messages, response_format(mode, json_schema))
            except ProviderError:
                raise
            except TimeoutError:
                raise self._timed_out() from None
            except Exception as exc:  # a client raises many types; each becomes one ProviderError
                if self._refuses_format(exc) and mode < self.modes[1]:
                    following = OutputMode(mode + 1)
                    self._remember(mode, following, exc)
                    mode = following
                    continue
                raise self._failure(exc, mode) from None  # from None: the cause may quote the key

    @abstractmethod
    async def aclose(self) -> None:
        """Close the HTTP client the adapter asks through (its connections on this event loop)."""

    @abstractmethod
    async def _request(self, messages: list[dict[str, str]], fmt: dict[str, Any] | None) -> Completion:
        """One request in one output format (None: no response_format), its answer read with
        read_answer; the client's own exceptions are left to _explain."""

    @abstractmethod
    def _refuses_format(self, exc: Exception) -> bool:
        """True when `exc` is the provider refusing the response_format option itself."""

    @abstractmethod
    def _explain(self, exc: Exception) -> Failure:
        """What the client's exception `exc` means."""

    @abstractmethod
    def _provider_words(self, exc: Exception) -> str:
        """The provider's own message in `exc`, for the log of a refused format."""

    def _check_credentials(self) -> None:
        if self._credentials_checked:
            return
        missing = missing_credentials(self.model, api_base=self.api_base, api_key=self._api_key)
        if missing:
            raise ProviderError(missing, cause=FailureCause.MISSING_CREDENTIALS)
        self._credentials_checked = True

    def _remember(self, refused: OutputMode, following: OutputMode, exc: Exception) -> None:
        if self._formats.advance(self._key, following):
            self.log.warning("the LLM refused a response format; using the next one from now on", extra={
                "model": self.model, "api_base_host": self.host, "refused": refused.label,
                "using": following.label, "reason": excerpt(self._scrub(self._provider_words(exc)), 200)})

    def _failure(self, exc: Exception, mode: OutputMode) -> ProviderError:
        cause, sentence, transient, headers = self._explain(exc)
        if cause is FailureCause.TIMEOUT:
            return self._timed_out()
        if cause is FailureCause.FORMAT_REFUSED:
            sentence = (f"the provider refused response_format {mode.label} "
                        f"(FIRMSIFT_LLM_RESPONSE_FORMAT={self.response_format}): {sentence}")
        # A refused format comes back refused (llama-cpp-python's 500 included): never retried.
        transient = cause is not FailureCause.FORMAT_REFUSED and transient
        wait = retry_after_seconds(headers) if transient else None
        return ProviderError(f"{self._where()}: {sentence}", retryable=transient, retry_after=wait,
                             cause=cause, rate_limits=read_rate_limit_headers(headers))

    def _timed_out(self) -> ProviderError:
        note = "" if self.retry_timeouts else "; not retried, a local server would still be busy with it"
        return ProviderError(f"{self._where()}: timed out, no answer within {self.timeout:g}s{note}",
                             retryable=self.retry_timeouts, cause=FailureCause.TIMEOUT)

    def _where(self) -> str:
        return f"{self.model} at {self.host}" if self.host else self.model

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "[redacted]")
        return text
