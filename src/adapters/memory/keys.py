"""In-memory API-key store: key records and digests in a dict (tests, teaching)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from firmsift.domain.keys import ApiKey


class InMemoryApiKeys:
    """Implements ApiKeyStore; `lookups` counts find_by_digest calls."""

    def __init__(self) -> None:
        self.keys: dict[str, ApiKey] = {}
        self.digests: dict[str, str] = {}  # digest -> key id
        self.lookups = 0

    async def add_key(self, key: ApiKey, digest: str) -> None:
        if key.id in self.keys or digest in self.digests:
            raise ValueError(f"key {key.id} exists")
        self.keys[key.id] = key
        self.digests[digest] = key.id

    async def find_by_digest(self, digest: str) -> ApiKey | None:
        self.lookups += 1
        key_id = self.digests.get(digest)
        return self.keys[key_id] if key_id else None

    async def list_keys(self) -> list[ApiKey]:
        return sorted(self.keys.values(), key=lambda k: (k.created_at, k.id))

    async def revoke(self, key_id: str, at: datetime) -> ApiKey | None:
        key = self.keys.get(key_id)
        if key is not None and key.revoked_at is None:
            key = self.keys[key_id] = replace(key, revoked_at=at)
        return key

    async def get_key(self, key_id: str) -> ApiKey | None:
        return self.keys.get(key_id)

    async def set_daily_limit(self, key_id: str, limit_usd: float | None) -> ApiKey | None:
        key = self.keys.get(key_id)
        if key is not None:
            key = self.keys[key_id] = replace(key, daily_limit_usd=limit_usd)
        return key
