"""The LLM port on OpenAI's chat-completions API, spoken directly over httpx: OpenAI itself and
every OpenAI-compatible server (llama.cpp, llama-cpp-python, vLLM, LM Studio, Ollama's /v1).

The request is the one litellm sends for these models (checked against it in the tests): POST
<api base>/chat/completions with `Authorization: Bearer <key>` and the body `model` (without
litellm's `openai/` prefix), `messages`, `max_tokens` (`max_completion_tokens` for the reasoning
series), `temperature` if set and `response_format` per output mode. It costs a fraction of
litellm's CPU per call and never imports litellm (client_choice.py says which models it serves).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import httpx

from firmsift.adapters.llm.answers import LLM_RESPONSE_LIMITS, read_answer
from firmsift.adapters.llm.client_choice import is_reasoning_series
from firmsift.adapters.llm.endpoint import OPENAI_API_BASE, OPENAI_KEY_VARIABLE
from firmsift.adapters.llm.http_failures import StatusFailure, UnreadableAnswer, error_words, explain, provider_words
from firmsift.adapters.llm.http_failures import refuses_format
from firmsift.adapters.llm.laddered_llm import Failure, LadderedLLM
from firmsift.adapters.web.bounded_transport import bounded_client
from firmsift.ports.providers import Completion

log = logging.getLogger(__name__)

# finish_reason values of OpenAI-compatible servers that are not OpenAI's own, as litellm maps them.
_FINISH_REASONS = {"stop": "stop", "length": "length", "content_filter": "content_filter",
                   "tool_calls": "tool_calls", "function_call": "function_call", "max_tokens": "length",
                   "eos": "stop", "eos_token": "stop", "stop_sequence": "stop", "end_turn": "stop",
                   "refusal": "content_filter"}


class OpenAIChat(LadderedLLM):
    """An LLM at an OpenAI-compatible chat-completions endpoint, asked through the output-format
    ladder of LadderedLLM, with the litellm adapter's behaviour from the outside.

    The API base defaults as litellm's does: OPENAI_BASE_URL, then OPENAI_API_BASE, then OpenAI's;
    the key is the one given, else OPENAI_API_KEY. Answers are read within LLM_RESPONSE_LIMITS
    through one pooled HTTP client made with the adapter; aclose() closes it (the container does,
    with its other HTTP clients, see Container.http_clients).
    """

    log = log

    def _open(self) -> None:
        self.wire_model = self.model.removeprefix("openai/")
        base = self.api_base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or OPENAI_API_BASE
        self.url = f"{base.rstrip('/')}/chat/completions"
        self._tokens_field = "max_completion_tokens" if is_reasoning_series(self.wire_model) else "max_tokens"
        self._bearer = self._api_key or os.environ.get(OPENAI_KEY_VARIABLE)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._bearer:
            self._headers["Authorization"] = f"Bearer {self._bearer}"
        self._http = bounded_client(LLM_RESPONSE_LIMITS, httpx.AsyncHTTPTransport,
                                    proxy_for=lambda url: httpx.AsyncHTTPTransport(proxy=url))

    async def aclose(self) -> None:
        """Close the HTTP client the adapter asks through (its connections on this loop)."""
        await self._http.aclose()

    async def _request(self, messages: list[dict[str, str]], fmt: dict[str, Any] | None) -> Completion:
        body: dict[str, Any] = {"model": self.wire_model, "messages": messages, self._tokens_field: self.max_tokens}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if fmt is not None:
            body["response_format"] = fmt
        response = await self._http.post(self.url, content=json.dumps(body).encode(), headers=self._headers,
                                         timeout=self.timeout)
        if response.status_code >= 400:
            raise StatusFailure(response.status_code, provider_words(response.content), response.headers,
                                body=response.text)
        document = _decoded(response.content)
        words = error_words(document) if "choices" not in document else None
        if words is not None:  # an error object in a 200 answer, read as litellm does: a 400 not sent
            raise StatusFailure(400, words, None, body=response.text, sent_status=False)
        choices = document.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, dict):
                choice["finish_reason"] = _FINISH_REASONS.get(choice.get("finish_reason"), "stop")
        return read_answer(document, response.headers, where=self._where(), model=self.model,
                           max_tokens=self.max_tokens, scrub=self._scrub)

    def _refuses_format(self, exc: Exception) -> bool:
        return refuses_format(exc)

    def _explain(self, exc: Exception) -> Failure:
        return explain(exc, self.host or "the provider", self._scrub)

    def _provider_words(self, exc: Exception) -> str:
        return exc.words if isinstance(exc, StatusFailure) else str(exc)

    def _scrub(self, text: str) -> str:
        text = super()._scrub(text)
        return text.replace(self._bearer, "[redacted]") if self._bearer else text


def _decoded(content: bytes) -> dict[str, Any]:
    """The JSON object of a 2xx answer; UnreadableAnswer for anything else (litellm's words)."""
    try:
        document = json.loads(content)
    except ValueError as exc:
        raise UnreadableAnswer(str(exc)) from None
    if not isinstance(document, dict):
        raise UnreadableAnswer(f"Empty or invalid response from LLM endpoint. Received: {document!r:.100}")
    return document
