"""Whether outbound traffic goes through a proxy: the variables httpx (and so the LLM and search
calls) honour. Only a variable's name is ever reported, never its value (it may hold a password)."""

from __future__ import annotations

from collections.abc import Mapping

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def outbound_proxy_variable(environ: Mapping[str, str]) -> str | None:
    """The name of the first proxy variable set in `environ`, or None."""
    return next((name for name in PROXY_VARIABLES if environ.get(name, "").strip()), None)


def outbound_proxy(environ: Mapping[str, str]) -> tuple[str | None, str]:
    """(the proxy's URL, NO_PROXY's value) for fetching web pages: HTTPS_PROXY first (a homepage is
    asked over https first), then HTTP_PROXY and ALL_PROXY; (None, "") when none is set."""
    variable = outbound_proxy_variable(environ)
    no_proxy = (environ.get("NO_PROXY") or environ.get("no_proxy") or "").strip()
    return (environ[variable].strip() if variable else None), no_proxy
