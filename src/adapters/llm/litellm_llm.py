"""The LLM port on litellm: one chat completion per call, structured output where the provider allows it."""

from __future__ import annotations

import logging
from typing import Any

from firmsift.adapters.llm.answers import read_answer
from firmsift.adapters.llm.failures import classify, is_transient, provider_message, refuses_output_format
from firmsift.adapters.llm.failures import response_headers as _response_headers
from firmsift.adapters.llm.laddered_llm import Failure, LadderedLLM
from firmsift.adapters.llm.offline import litellm
from firmsift.adapters.llm.output_modes import OutputMode, response_format
from firmsift.adapters.llm.transport import LLM_RESPONSE_LIMITS, LitellmHttp, provider_of, reads_within_limits
from firmsift.ports.providers import Completion

__all__ = ["LiteLLM", "OutputMode", "refuses_output_format", "is_transient", "response_format"]

log = logging.getLogger(__name__)


class LiteLLM(LadderedLLM):
    """An LLM reached through litellm (any provider it supports, or an OpenAI-compatible server),
    asked through the output-format ladder of LadderedLLM.

    Answers are read within LLM_RESPONSE_LIMITS through an HTTP client made with the adapter
    (litellm_transport.LitellmHttp); aclose() closes it (the container does, with its other HTTP
    clients, see Container.http_clients).
    """

    log = log

    def _open(self) -> None:
        self._provider = provider_of(self.model, self.api_base)
        self._http = LitellmHttp()
        if not reads_within_limits(self._provider):
            log.warning("litellm reads this provider's answers without a size limit; firmsift bounds them "
                        "(%s bytes) only for the providers it has checked (docs/explanation/reliability.md, What it guards against)",
                        f"{LLM_RESPONSE_LIMITS.max_bytes:,}", extra={"model": self.model})

    async def aclose(self) -> None:
        """Close the HTTP client the adapter reads answers through (its connections on this loop)."""
        await self._http.aclose()

    async def _request(self, messages: list[dict[str, str]], fmt: dict[str, Any] | None) -> Completion:
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
        response = await litellm.acompletion(**options)
        return read_answer(response, _answer_headers(response), where=self._where(), model=self.model,
                           max_tokens=self.max_tokens, scrub=self._scrub)

    def _refuses_format(self, exc: Exception) -> bool:
        return refuses_output_format(exc)

    def _explain(self, exc: Exception) -> Failure:
        cause, sentence = classify(exc, self.host or "the provider", self._scrub)
        return Failure(cause, sentence, is_transient(exc), _response_headers(exc))

    def _provider_words(self, exc: Exception) -> str:
        return provider_message(exc)


def _answer_headers(response: Any) -> Any:
    """The headers of a successful answer: litellm keeps them in its hidden parameters, the
    provider's own names behind an "llm_provider-" prefix (read_rate_limit_headers reads both)."""
    hidden = getattr(response, "_hidden_params", None)
    return hidden.get("additional_headers") if isinstance(hidden, dict) else None
