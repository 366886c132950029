"""Whether outbound traffic goes through a proxy: the variables httpx (and so the LLM and search
calls) honour. Only a variable's name is ever reported, never its value (it may hold a password)."""

from __future__ import annotations

from collections.abc import Mapping

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def outbound_proxy_variable(environ: Mapping[str, str]) -> str | None:
    """The name of the first proxy variable set in `environ`, or None."""
    return next((name for name in PROXY_VARIABLES if environ.get(name, "").strip()), None)
