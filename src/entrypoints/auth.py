"""Who is calling the API: the API key in a request's headers, its rate limit, and whether
authentication is on for the address the API listens on."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from firmsift.domain.keys import ANONYMOUS, Caller, authenticate
from firmsift.entrypoints.rate_limit import TokenBuckets
from firmsift.ports.keys import ApiKeyStore


class UnsafeAuthSetting(ValueError):
    """Authentication turned off on an address other hosts can reach (a usage error, exit 2)."""


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach: 127.0.0.0/8, ::1 and `localhost`."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name or a wildcard such as 0.0.0.0: other machines may reach it


def auth_required(mode: str, host: str) -> bool:
    """Whether API keys are required when serving on `host` under FIRMSIFT_AUTH=`mode`.

    `auto` is off on loopback, so a newcomer's `firmsift serve` just works, and required on any
    other address; `off` is refused on any other address, so no setting can expose an open API.
    A reverse proxy in front of a loopback listener makes it reachable: set `required` there."""
    loopback = is_loopback(host)
    if mode == "off" and not loopback:
        raise UnsafeAuthSetting(
            f"FIRMSIFT_AUTH=off is allowed only when listening on a loopback address, not on {host!r}: "
            "create a key with `firmsift keys create --name NAME` and leave FIRMSIFT_AUTH at auto or required")
    return mode == "required" or (mode == "auto" and not loopback)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key a request presents: `Authorization: Bearer <key>`, else `X-API-Key: <key>`."""
    authorization = headers.get("authorization", "")
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return headers.get("x-api-key", "").strip() or None


class Gate:
    """Decides who a request acts for. With keys required: the key's Caller, after charging its
    rate limit (MissingApiKey, InvalidApiKey or RateLimited otherwise); without: ANONYMOUS."""

    def __init__(self, keys: ApiKeyStore | None, limiter: TokenBuckets | None) -> None:
        self.keys = keys
        self.limiter = limiter

    @property
    def required(self) -> bool:
        return self.keys is not None

    async def caller(self, headers: Mapping[str, str]) -> Caller:
        if self.keys is None:
            return ANONYMOUS
        key = await authenticate(presented_key(headers), self.keys)
        if self.limiter is not None:
            self.limiter.take(key.id)
        return key.caller()
