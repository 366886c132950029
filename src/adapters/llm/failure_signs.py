"""What a failed LLM call shows, read without litellm: the provider's words for a refused output
format, a prompt too long and a content-policy refusal, and a transport failure down an
exception's chain of causes. Both LLM adapters' failure mappings read them (failures.py for
litellm's exceptions, http_failures.py for the direct OpenAI-compatible client's)."""

from __future__ import annotations

import socket
import ssl

import httpx

from firmsift.domain.errors import FailureCause
from firmsift.domain.excerpts import excerpt

# Words a provider uses when it refuses the output-format option itself, not the request:
# llama.cpp "response_format type must be one of ...", llama-cpp-python's validation error at
# loc ('body', 'response_format', 'type'), LM Studio "'response_format.type' must be ...",
# vLLM "The provided JSON schema contains features not supported by xgrammar".
FORMAT_WORDS = ("response_format", "response format", "json_object", "json_schema", "schema", "grammar",
                "structured output", "guided")
# Statuses a format refusal comes with: 400/422 (llama.cpp, LM Studio, vLLM), 500 (llama-cpp-python,
# older llama.cpp), 501 (llama.cpp's "not supported").
REFUSAL_STATUSES = (400, 422, 500, 501)
# How OpenAI and the servers copying it say a prompt is too long (the phrases litellm's exception
# mapping looks for in an OpenAI-compatible provider's error, lower case).
PROMPT_TOO_LONG_WORDS = (
    "exceed context limit", "this model's maximum context length is",
    "requested token count exceeds the model's maximum context length",
    "string too long. expected a string with maximum length", "model's maximum context limit",
    "is longer than the model's context length", "input tokens exceed the configured limit",
    "exceeds the available context size",  # llama.cpp
    '"code": "context_length_exceeded"', "prompt is too long")
DETAIL_LIMIT = 300


def names_the_format(text: str) -> bool:
    """True when a provider's error message is about the output-format option."""
    lower = text.lower()
    return any(word in lower for word in FORMAT_WORDS)


def says_prompt_too_long(text: str) -> bool:
    """True when a provider's error says the prompt does not fit the model's context."""
    lower = text.lower()
    if "string_above_max_length" in lower or ("invalid 'user'" in lower and "string too long" in lower):
        return False  # a request field too long (OpenAI's `user`), not the prompt
    return any(words in lower for words in PROMPT_TOO_LONG_WORDS)


def says_content_policy(text: str) -> bool:
    """True when OpenAI (or a server copying it) refused the prompt under its usage policy."""
    return (("invalid_request_error" in text and "content_policy_violation" in text)
            or ("Invalid prompt" in text and "violating our usage policy" in text)
            or "request was rejected as a result of the safety system" in text.lower())


def transport_failure(exc: BaseException,
                      connection_errors: tuple[type[BaseException], ...] = ()) -> FailureCause | None:
    """UNREACHABLE for a connection that failed before any answer, REJECTED for a TLS failure
    (not transient), None when the provider was reached. `connection_errors` adds a client's
    own connection error types (the OpenAI client's, inside litellm)."""
    if caused_by(exc, (ssl.SSLError, ssl.CertificateError)) or named_in_chain(exc, "SSL", "Certificate"):
        return FailureCause.REJECTED
    if caused_by(exc, (*connection_errors, ConnectionError, httpx.TransportError, socket.gaierror)):
        return FailureCause.UNREACHABLE
    return None


def transport_sentence(exc: BaseException, where: str) -> str:
    """A sentence naming what failed on the way to the provider at `where` (a host)."""
    if transport_failure(exc) is FailureCause.REJECTED:
        reason = deepest(exc)
        return f"TLS failed with {where}: {excerpt(str(reason), DETAIL_LIMIT) or type(reason).__name__}"
    if caused_by(exc, (socket.gaierror,)) or named_in_chain(exc, "DNS"):
        return f"could not reach the provider: could not resolve host {where} (DNS)"
    if caused_by(exc, (ConnectionRefusedError,)):
        return f"could not reach the provider: connection refused by {where} (is the server running?)"
    if caused_by(exc, (ConnectionResetError, BrokenPipeError)):
        return f"could not reach the provider: {where} closed the connection"
    return f"could not reach the provider at {where} ({type(deepest(exc)).__name__})"


def deepest(exc: BaseException) -> BaseException:
    """The first cause of `exc`: the end of its chain."""
    seen: set[int] = set()
    current = exc
    while id(current) not in seen:
        seen.add(id(current))
        following = current.__cause__ or current.__context__
        if following is None:
            break
        current = following
    return current


def named_in_chain(exc: BaseException, *words: str) -> bool:
    """aiohttp's connector errors (ClientConnectorDNSError, ClientConnectorCertificateError) are
    told apart by name: aiohttp is litellm's transport, not ours to import."""
    return any(any(word in type(link).__name__ for word in words) for link in chain(exc))


def caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    """Whether `exc` or any of its causes is one of `kinds`: clients re-wrap transport errors (a
    refused connection surfaces from litellm as an HTTP 500), so look down the chain for the real one."""
    return any(isinstance(link, kinds) for link in chain(exc))


def chain(exc: BaseException) -> list[BaseException]:
    """`exc` and its causes (explicit or implicit), each once."""
    seen: set[int] = set()
    links: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        links.append(current)
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return links
