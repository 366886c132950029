"""API-key use-cases: issue a key, revoke it, and authenticate a request by the key it presents."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from firmsift.domain.budgets import check_limit
from firmsift.domain.clock import utc_now
from firmsift.domain.errors import InvalidRequest, Rejection
from firmsift.domain.keys import (
    KEY_PREFIX,
    MAX_NAME_LENGTH,
    MAX_PRESENTED_LENGTH,
    ApiKey,
    ApiKeyNotFound,
    InvalidApiKey,
    IssuedKey,
    MissingApiKey,
    digest_of,
    new_key_id,
    new_secret,
)
from firmsift.domain.reply_queues import check_reply_queue

if TYPE_CHECKING:
    from firmsift.ports.keys import ApiKeyStore


async def create_key(
    name: str,
    reply_queues: Iterable[str],
    keys: ApiKeyStore,
    *,
    daily_limit_usd: float | None = None,
    now: Callable[[], datetime] = utc_now,
) -> IssuedKey:
    """Make and store a new key allowed to name `reply_queues` (none if empty), with its own daily
    spend limit in USD (None: none but the global one)."""
    name = name.strip()
    if not name or len(name) > MAX_NAME_LENGTH or not name.isprintable():
        raise InvalidRequest("invalid key name", (Rejection(name, f"must be 1-{MAX_NAME_LENGTH} printable characters"),))
    queues = tuple(dict.fromkeys(q for q in (check_reply_queue(r) for r in reply_queues) if q))
    record = ApiKey(id=new_key_id(), name=name, reply_queues=queues, created_at=now(),
                    daily_limit_usd=check_limit(daily_limit_usd))
    secret = new_secret()
    await keys.add_key(record, digest_of(secret))
    return IssuedKey(record=record, secret=secret)


async def revoke_key(key_id: str, keys: ApiKeyStore, *, now: Callable[[], datetime] = utc_now) -> ApiKey:
    """Revoke a key at once (idempotent: a revoked key keeps its first revocation time)."""
    revoked = await keys.revoke(key_id, now())
    if revoked is None:
        raise ApiKeyNotFound(key_id)
    return revoked


async def authenticate(secret: str | None, keys: ApiKeyStore) -> ApiKey:
    """The active key `secret` is, or MissingApiKey / InvalidApiKey. Looked up on every request,
    so a revocation takes effect on the next one."""
    if not secret:
        raise MissingApiKey()
    if not secret.startswith(KEY_PREFIX) or len(secret) > MAX_PRESENTED_LENGTH:
        raise InvalidApiKey()
    key = await keys.find_by_digest(digest_of(secret))
    if key is None or key.revoked:
        raise InvalidApiKey()
    return key
