"""The credentials a model's provider needs and which of them are unset: told by litellm
(credentials.py) or, for OpenAI's chat models, without it (endpoint.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProviderCredentials:
    """A model's provider ("" when it cannot be told) and the variables its credentials would be
    read from that are unset (none: nothing missing)."""

    provider: str
    variables: tuple[str, ...]

    @property
    def missing(self) -> bool:
        return bool(self.variables)
