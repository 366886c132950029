"""Where the LLM lives and whether it has credentials: a local server, and the key a provider needs."""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

from firmsift.adapters.llm.client_choice import openai_chat_model
from firmsift.adapters.llm.credential_report import ProviderCredentials

# Names that only ever resolve inside one machine or one private network.
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
OPENAI_KEY_VARIABLE = "OPENAI_API_KEY"
OPENAI_API_BASE = "https://api.openai.com/v1"  # where OpenAI's own API lives


def api_base_host(api_base: str | None) -> str | None:
    """The host (and port, if given) of an API base URL, for logs and reports: never its path or
    userinfo, which may hold a key."""
    if not api_base:
        return None
    parts = urlsplit(api_base if "//" in api_base else f"//{api_base}")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{host}:{port}" if port else host or None


def is_local_api_base(api_base: str | None) -> bool:
    """True when the API base is a server on this machine or a private network: a loopback,
    private or link-local address, `localhost`, a name under a local-only suffix (.local,
    .internal, .lan, ...) or a single-label name (a container or host name such as `ollama`).

    Such a server needs no key, costs nothing per token, and usually serves one request at a time.
    """
    if not api_base:
        return False
    parts = urlsplit(api_base if "//" in api_base else f"//{api_base}")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or host.endswith(_LOCAL_SUFFIXES) or "." not in host
    return address.is_loopback or address.is_private or address.is_link_local


def unset_credentials(model: str, *, api_base: str | None, api_key: str | None) -> ProviderCredentials | None:
    """The provider's credential variables that a call to `model` would need and finds unset; None
    when it can be authenticated. The one rule for the adapter and the worker's start-up check.

    No key is needed when one is given, or when an API base names a server of the user's own
    (local or a gateway: only it knows whether it wants a key, and it says so if it does).
    Otherwise litellm says which of the provider's own variables (OPENAI_API_KEY,
    ANTHROPIC_API_KEY, ...) it would read; when none of them is set the call would fail before
    reaching the provider. A model of OpenAI's chat completions needs OPENAI_API_KEY, as litellm
    says, told without importing litellm (a worker on the direct client never does).
    """
    if api_key or api_base:
        return None
    if openai_chat_model(model) is not None:
        return None if os.environ.get(OPENAI_KEY_VARIABLE) else ProviderCredentials("openai", (OPENAI_KEY_VARIABLE,))
    # Imported here: litellm costs seconds, and only a process that calls the LLM needs it.
    from firmsift.adapters.llm.credentials import provider_credentials

    found = provider_credentials(model)
    return found if found.missing else None


def missing_credentials(model: str, *, api_base: str | None, api_key: str | None) -> str | None:
    """Why a call to `model` cannot be authenticated, naming the variables to set; None when it can."""
    found = unset_credentials(model, api_base=api_base, api_key=api_key)
    if found is None:
        return None
    provider_variables = " or ".join(found.variables)
    return (f"missing credentials for {model}: set FIRMSIFT_LLM_API_KEY (or {provider_variables}); "
            "for a local OpenAI-compatible server set FIRMSIFT_LLM_MODEL=openai/<model> and "
            "FIRMSIFT_LLM_API_BASE=http://127.0.0.1:8080/v1 (no request was made)")
