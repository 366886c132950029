"""The API-key store port: key records looked up by the digest of the key, never by the key."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from firmsift.domain.keys import ApiKey


class ApiKeyStore(Protocol):
    async def add_key(self, key: ApiKey, digest: str) -> None:
        """Store a new key record with the digest of its key (the key itself is never stored)."""

    async def find_by_digest(self, digest: str) -> ApiKey | None:
        """The key whose digest this is, revoked or not, or None."""

    async def list_keys(self) -> list[ApiKey]:
        """Every key, oldest first."""

    async def revoke(self, key_id: str, at: datetime) -> ApiKey | None:
        """Mark the key revoked (keeping an earlier revocation time); the key as now stored, or
        None if there is no such key."""

    async def get_key(self, key_id: str) -> ApiKey | None:
        """The key with this id, revoked or not, or None."""

    async def set_daily_limit(self, key_id: str, limit_usd: float | None) -> ApiKey | None:
        """Set (None: remove) the key's daily spend limit; the key as now stored, or None if
        there is no such key."""
