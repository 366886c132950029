"""litellm's HTTP reads, bounded: a provider (or anyone on the way to a plain-http API base)
answering a compression bomb or an endless body meets an error, not a gigabyte of memory.

litellm reads a provider's answer through one of two clients, by provider:
- the OpenAI client (openai/, azure/, and the OpenAI-compatible providers it reaches that way,
  every local server configured as `openai/<model>` among them), which reads through the
  process-wide `litellm.aclient_session`, made the bounded client before each call;
- litellm's own AsyncHTTPHandler for the providers it speaks to natively (anthropic/, gemini/,
  ollama/, groq/, ...), which takes a `client` per call: the bounded one. Given to a provider on
  the OpenAI client's path it would break every call, so it is given only to the providers listed
  here, each checked by tests/integration/test_llm_response_limits.py.
LitellmHttp holds both, for one LLM adapter, which closes it (see LiteLLM.aclose); nothing is
created at import.

Both read through the transport litellm would have used (aiohttp's by default, which asks
aiohttp not to decompress and reads the environment's proxies itself; httpx's when
DISABLE_AIOHTTP_TRANSPORT is set), wrapped by `BoundedTransport`, with litellm's SSL settings
(SSL_VERIFY, SSL_CERT_FILE). A provider on neither list is read by litellm unbounded (docs/explanation/reliability.md,
"What it guards against").
"""

from __future__ import annotations

import ssl

import httpx
from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, get_ssl_configuration

from firmsift.adapters.llm.answers import LLM_RESPONSE_LIMITS
from firmsift.adapters.web.bounded_transport import bounded_client
from firmsift.adapters.llm.offline import litellm

__all__ = ["LLM_RESPONSE_LIMITS", "LitellmHttp", "provider_of", "reads_within_limits"]

# Providers litellm reaches through the OpenAI client (read through litellm.aclient_session).
OPENAI_CLIENT_PROVIDERS = frozenset({
    "openai", "azure", "custom_openai", "text-completion-openai", "lm_studio", "llamafile", "perplexity",
    "cerebras", "sambanova", "nvidia_nim", "deepinfra", "github", "nebius", "novita", "dashscope", "moonshot"})
# Providers litellm reaches through its own AsyncHTTPHandler (read through the handler given per call).
NATIVE_PROVIDERS = frozenset({
    "anthropic", "gemini", "ollama", "ollama_chat", "hosted_vllm", "groq", "deepseek", "together_ai",
    "mistral", "openrouter", "fireworks_ai", "xai", "databricks", "huggingface", "azure_ai", "lemonade"})

_SSL = get_ssl_configuration()


def _litellm_transport() -> httpx.AsyncBaseTransport:
    """The transport litellm builds for its own clients (aiohttp's unless turned off)."""
    transport = AsyncHTTPHandler.create_async_transport(
        ssl_context=_SSL if isinstance(_SSL, ssl.SSLContext) else None,
        ssl_verify=_SSL if isinstance(_SSL, bool) else None)
    return transport or httpx.AsyncHTTPTransport(verify=_SSL)


def _httpx_proxy(url: str) -> httpx.AsyncBaseTransport:
    return httpx.AsyncHTTPTransport(proxy=url, verify=_SSL)


def _bounded_client() -> httpx.AsyncClient:
    # aiohttp's transport reads HTTP(S)_PROXY itself; httpx's needs them mounted.
    proxies = None if AsyncHTTPHandler.should_use_aiohttp_transport() else _httpx_proxy
    return bounded_client(LLM_RESPONSE_LIMITS, _litellm_transport, proxy_for=proxies)


class LitellmHttp:
    """The bounded client an LLM adapter's calls read through, on both of litellm's paths: one
    client (one connection pool per event loop), also held by the handler given per call.
    Neither litellm nor the handler closes a client it was given: its owner calls aclose(), on
    the loop that used it, once that loop is done with the LLM (litellm keeps, per loop, the
    OpenAI client it built around the session, so a later call there would meet a closed one)."""

    def __init__(self) -> None:
        self._client = _bounded_client()
        self._handler = AsyncHTTPHandler()
        self._handler.client = self._client

    def client_for(self, provider: str | None) -> AsyncHTTPHandler | None:
        """What to pass litellm as `client` for a call to a model of `provider` (see provider_of):
        the bounded handler for the providers litellm speaks to natively, None for the others,
        which read through litellm.aclient_session, made this client here. The session is the
        process's, so it is set before every call: another adapter may have set its own, or
        closed it."""
        if provider in NATIVE_PROVIDERS:
            return self._handler
        litellm.aclient_session = self._client
        return None

    async def aclose(self) -> None:
        """Close the client (and its connections on this event loop); litellm's session is no longer it."""
        if litellm.aclient_session is self._client:
            litellm.aclient_session = None
        await self._client.aclose()


def provider_of(model: str, api_base: str | None) -> str | None:
    """The provider litellm routes `model` to, or None when litellm does not know it (the call
    then fails with litellm's own words)."""
    try:
        return litellm.get_llm_provider(model=model, api_base=api_base)[1]
    except Exception:  # noqa: BLE001 - litellm raises several types for a model it cannot place
        return None


def reads_within_limits(provider: str | None) -> bool:
    """True when litellm reads the answers of `provider`'s models within LLM_RESPONSE_LIMITS."""
    return provider in OPENAI_CLIENT_PROVIDERS | NATIVE_PROVIDERS
