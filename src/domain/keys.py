"""API keys: what a key and its record are, how a key is made and kept (as a SHA-256 digest only),
and who a caller is. Issuing, revoking and checking keys against the store: services/keys.py."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from firmsift.domain.errors import FirmsiftError

KEY_PREFIX = "fs_"  # makes a leaked key easy to recognise (and to scan for) in logs and repositories
KEY_BYTES = 32
MAX_PRESENTED_LENGTH = 200  # anything longer cannot be one of ours: refused without a lookup
MAX_NAME_LENGTH = 100


@dataclass(frozen=True)
class Caller:
    """Who a request acts for: the owner recorded on its jobs, the reply queues it may name
    (None: any, when authentication is off; empty: none) and its daily spend limit in USD (None: none)."""

    owner: str
    reply_queues: frozenset[str] | None
    daily_limit_usd: float | None = None


ANONYMOUS = Caller(owner="", reply_queues=None)


@dataclass(frozen=True)
class ApiKey:
    """A key's record. The key itself is never stored, only its digest (see digest_of)."""

    id: str
    name: str
    reply_queues: tuple[str, ...]
    created_at: datetime
    revoked_at: datetime | None = None
    daily_limit_usd: float | None = None  # what the key's jobs may spend a UTC day; None: no limit of its own

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def caller(self) -> Caller:
        return Caller(owner=self.id, reply_queues=frozenset(self.reply_queues), daily_limit_usd=self.daily_limit_usd)


@dataclass(frozen=True)
class IssuedKey:
    """A new key's record and the key itself, which is shown to its owner once and then forgotten."""

    record: ApiKey
    secret: str


class NotAuthenticated(FirmsiftError):
    """The request carries no usable API key."""

    code = "unauthenticated"


class MissingApiKey(NotAuthenticated):
    code = "missing_api_key"

    def __init__(self) -> None:
        super().__init__("an API key is required: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'")


class InvalidApiKey(NotAuthenticated):
    """Unknown or revoked; the two are not told apart, so a caller learns nothing from trying."""

    code = "invalid_api_key"

    def __init__(self) -> None:
        super().__init__("the API key is not valid (unknown or revoked)")


class ApiKeyNotFound(FirmsiftError):
    code = "api_key_not_found"

    def __init__(self, key_id: str) -> None:
        super().__init__(f"no API key with id {key_id!r}")
        self.key_id = key_id


def new_secret() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(KEY_BYTES)


def new_key_id() -> str:
    return "key_" + secrets.token_hex(8)


def digest_of(secret: str) -> str:
    """What is stored and looked up instead of the key. A plain SHA-256 is enough here: keys are
    256 random bits, so there is no dictionary to try and no salt or slow hash would add anything.
    Lookups go by this digest, so timing can only reveal facts about digests, never about keys."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()
