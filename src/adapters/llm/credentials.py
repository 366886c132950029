"""The environment variables litellm reads a model provider's credentials from, and which are unset."""

from __future__ import annotations

import contextlib
import io
import os

from firmsift.adapters.llm.credential_report import ProviderCredentials
from firmsift.adapters.llm.offline import litellm

__all__ = ["ProviderCredentials", "provider_credentials"]

# Providers that authenticate through a cloud credential chain (instance or task roles,
# application default credentials) as well as through variables: unset variables prove nothing.
CREDENTIAL_CHAIN_PROVIDERS = frozenset({"bedrock", "bedrock_converse", "sagemaker", "sagemaker_chat",
                                        "vertex_ai", "vertex_ai_beta"})

# Variables litellm may list as missing that are not credentials.
NOT_CREDENTIALS = ("_API_BASE", "_BASE_URL", "_API_VERSION", "_REGION", "_REGION_NAME", "_PROJECT", "_LOCATION")


def provider_credentials(model: str) -> ProviderCredentials:
    """The credential variables `model`'s provider needs that are not set in the environment.
    Nothing missing when litellm does not know the provider (it cannot say what it needs) or the
    provider may use a credential chain; API base variables are left out, litellm has defaults."""
    with contextlib.redirect_stdout(io.StringIO()):  # litellm prints its provider list for unknown models
        try:
            _model, provider, _key, _base = litellm.get_llm_provider(model)
        except Exception:  # noqa: BLE001 - litellm raises its own BadRequestError for an unknown provider
            return ProviderCredentials("", ())
        report = litellm.validate_environment(model)
    if provider in CREDENTIAL_CHAIN_PROVIDERS or report.get("keys_in_environment"):
        return ProviderCredentials(provider, ())
    # litellm lists every variable of some providers (Azure, Cloudflare) when any one is unset,
    # set ones included, and lists settings that are not credentials (a base URL, a version, a
    # region: litellm has defaults or the call says what is wrong).
    named = [name for name in report.get("missing_keys", ()) if not name.endswith(NOT_CREDENTIALS)]
    if any(os.environ.get(name) for name in named):
        return ProviderCredentials(provider, ())
    return ProviderCredentials(provider, tuple(named))
