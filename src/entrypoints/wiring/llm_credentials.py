"""Whether the worker's LLM can authenticate, and the three ways to fix it when it cannot."""

from __future__ import annotations

from firmsift.adapters.llm.endpoint import unset_credentials
from firmsift.entrypoints.settings import ConfigurationError, Settings

READINESS_CHECK = "llm"  # the /readyz check of `firmsift serve` whose worker has no credentials
NO_CREDENTIALS = "no credentials: set FIRMSIFT_LLM_API_KEY (the log at start-up lists every way)"


class MissingLLMCredentials(ConfigurationError):
    """The worker's LLM has no key and no API base of its own (exit code 2)."""


def llm_credentials_problem(settings: Settings) -> str | None:
    """What is missing for the configured model to authenticate, with the three ways to fix it;
    None when it has a key (FIRMSIFT_LLM_API_KEY or its provider's own variable), when firmsift
    cannot tell (a provider litellm does not know, or one with a cloud credential chain), or when
    FIRMSIFT_LLM_API_BASE names a server of the user's own: only that server can say whether it
    wants a key, and `firmsift llm check` asks it."""
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key is not None else None
    found = unset_credentials(settings.llm_model, api_base=settings.llm_api_base, api_key=key)
    if found is None:
        return None
    own = " or ".join(found.variables)
    return (f"the LLM has no credentials: model {settings.llm_model} (provider {found.provider}) needs a key "
            f"and neither FIRMSIFT_LLM_API_KEY nor {own} is set. Fix it in one of three ways: "
            f"(1) set FIRMSIFT_LLM_API_KEY to the provider's key; "
            f"(2) set {own}, the provider's own variable; "
            f"(3) point FIRMSIFT_LLM_API_BASE at a local OpenAI-compatible server (llama.cpp, llama-cpp-python, "
            f"Ollama, vLLM, LM Studio) and set FIRMSIFT_LLM_MODEL=openai/<model name>")


def require_llm_credentials(settings: Settings) -> None:
    """Refuse to start a worker that could only fail every job it takes."""
    problem = llm_credentials_problem(settings)
    if problem is not None:
        raise MissingLLMCredentials(problem)
