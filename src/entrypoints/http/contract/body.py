"""What every body model shares: no unknown fields, built on first use, and how the document
states an optional field and a bound that the app's settings decide."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The key under which a field's schema names the settings that complete it (see schemas.py).
CONFIGURED = "x-firmsift-configured"


class Body(BaseModel):
    """A JSON object of the contract: fields other than those declared are refused."""

    # defer_build: a model's validator and schema are built when first used, not when the API
    # module is imported (most models are only ever turned into the document, once).
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _without_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def optional(description: str, **constraints: Any) -> Any:
    """A field a body may leave out. Its Python default (None) is no value a caller could send,
    so the document states no default."""
    return Field(None, description=description, json_schema_extra=_without_default, **constraints)


def configured(description: str = "", **keywords: str) -> dict[str, Any]:
    """A schema that the app's settings complete: each keyword (enum, maxItems) takes the named
    setting's value, and `description` is formatted with the settings (see schemas.py)."""
    return {CONFIGURED: keywords, **({"description": description} if description else {})}
