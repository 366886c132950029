"""One API-key store suite, run against the in-memory store and the SQLite and PostgreSQL stores."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from dataclasses import replace

import pytest

from firmsift.domain.keys import ApiKey

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def keys(backend_container):  # noqa: ANN001, ANN201
    """The API key store on each backend."""
    return backend_container.api_keys()


def key(key_id: str, *queues: str, minutes: int = 0) -> ApiKey:
    return ApiKey(id=key_id, name=f"name of {key_id}", reply_queues=queues, created_at=NOW + timedelta(minutes=minutes))


async def test_keys_are_found_by_digest_only(keys) -> None:
    await keys.add_key(key("key_a", "q1", "q2.fifo"), "digest-a")
    assert await keys.find_by_digest("digest-a") == key("key_a", "q1", "q2.fifo")
    assert await keys.find_by_digest("key_a") is None
    assert await keys.find_by_digest("digest-b") is None


async def test_a_digest_belongs_to_one_key(keys) -> None:
    await keys.add_key(key("key_a"), "same")
    with pytest.raises(Exception):  # noqa: B017 - each store raises its own duplicate error
        await keys.add_key(key("key_b"), "same")


async def test_list_is_oldest_first_and_revoke_keeps_the_first_time(keys) -> None:
    await keys.add_key(key("key_new", minutes=5), "d1")
    await keys.add_key(key("key_old"), "d2")
    assert [k.id for k in await keys.list_keys()] == ["key_old", "key_new"]
    first = await keys.revoke("key_old", NOW + timedelta(hours=1))
    again = await keys.revoke("key_old", NOW + timedelta(hours=2))
    assert first.revoked_at == again.revoked_at == NOW + timedelta(hours=1)
    assert (await keys.find_by_digest("d2")).revoked
    assert not (await keys.find_by_digest("d1")).revoked
    assert await keys.revoke("key_missing", NOW) is None


async def test_a_daily_limit_is_stored_set_and_removed(keys) -> None:
    await keys.add_key(key("key_a"), "digest-a")
    assert (await keys.get_key("key_a")).daily_limit_usd is None
    assert (await keys.set_daily_limit("key_a", 2.5)).daily_limit_usd == 2.5
    assert (await keys.find_by_digest("digest-a")).daily_limit_usd == 2.5
    assert (await keys.set_daily_limit("key_a", None)).daily_limit_usd is None
    assert await keys.set_daily_limit("key_missing", 1.0) is None
    assert await keys.get_key("key_missing") is None
    await keys.add_key(replace(key("key_b"), daily_limit_usd=0.0), "digest-b")
    assert (await keys.get_key("key_b")).daily_limit_usd == 0.0
