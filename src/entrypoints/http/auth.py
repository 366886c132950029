"""Who is calling the API: the API key in a request's headers, its rate limit, and whether
authentication is on for the address the API listens on."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from firmsift.domain.allowed_hosts import is_loopback
from firmsift.domain.keys import ANONYMOUS, Caller, InvalidApiKey, digest_of
from firmsift.entrypoints.http.rate_limit import TokenBuckets
from firmsift.ports.keys import ApiKeyStore
from firmsift.services.keys import authenticate


class UnsafeAuthSetting(ValueError):
    """Authentication turned off on an address other hosts can reach (a usage error, exit 2)."""


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


def client_network(address: str) -> str:
    """The unit a client address is limited by: the address itself for IPv4, its /64 for IPv6
    (one host is routinely given a whole /64, so single IPv6 addresses cost an attacker nothing)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


class Gate:
    """Decides who a request acts for. With keys required: the key's Caller, after charging its
    rate limit (MissingApiKey, InvalidApiKey or RateLimited otherwise); without: ANONYMOUS.

    Every key is looked up in the database, so unknown keys are limited too, per client address
    (`failures`): each refused key spends a token of its address, and an address with none left
    gets 429 without a lookup, unless it presents a key this process has seen valid (so the
    clients behind one proxy or NAT keep working while one of them sends garbage)."""

    MAX_KNOWN_GOOD = 10_000

    def __init__(self, keys: ApiKeyStore | None, limiter: TokenBuckets | None,
                 failures: TokenBuckets | None = None) -> None:
        self.keys = keys
        self.limiter = limiter
        self.failures = failures
        self.known_good: set[str] = set()  # digests of keys found valid in this process

    @property
    def required(self) -> bool:
        return self.keys is not None

    async def caller(self, headers: Mapping[str, str], address: str = "") -> Caller:
        if self.keys is None:
            return ANONYMOUS
        secret = presented_key(headers)
        digest = digest_of(secret) if secret else ""
        network = client_network(address)
        if self.failures is not None and secret and digest not in self.known_good:
            self.failures.check(network)
        try:
            key = await authenticate(secret, self.keys)
        except InvalidApiKey:
            self.known_good.discard(digest)  # revoked: screened like any unknown key from now on
            if self.failures is not None:
                self.failures.spend(network)
            raise
        if len(self.known_good) >= self.MAX_KNOWN_GOOD:
            self.known_good.clear()
        self.known_good.add(digest)
        if self.limiter is not None:
            self.limiter.take(key.id)
        return key.caller()

    async def key_caller(self, key_id: str) -> Caller:
        """The Caller of the key with this id (a web session holds the id, never the key), after
        charging its rate limit; InvalidApiKey once the key is revoked or gone."""
        if self.keys is None:
            return ANONYMOUS
        key = await self.keys.get_key(key_id)
        if key is None or key.revoked:
            raise InvalidApiKey()
        if self.limiter is not None:
            self.limiter.take(key.id)
        return key.caller()
