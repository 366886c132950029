"""API keys on the in-memory store: issuing, digests, authentication, revocation; rate buckets; auth modes."""

import hashlib
from datetime import datetime, timezone

import pytest

from firmsift.adapters.memory.keys import InMemoryApiKeys
from firmsift.domain.errors import InvalidRequest
from firmsift.domain.keys import KEY_PREFIX, ApiKeyNotFound, InvalidApiKey, MissingApiKey, digest_of
from firmsift.entrypoints.http.auth import UnsafeAuthSetting, auth_required, presented_key
from firmsift.entrypoints.http.rate_limit import RateLimited, TokenBuckets
from firmsift.services.keys import authenticate, create_key, revoke_key

pytestmark = pytest.mark.anyio


async def test_a_new_key_is_random_prefixed_and_only_its_digest_is_stored() -> None:
    store = InMemoryApiKeys()
    first = await create_key("team", ["team-replies", "team-replies", "other.fifo"], store)
    second = await create_key("team", [], store)
    assert first.secret.startswith(KEY_PREFIX) and len(first.secret) >= len(KEY_PREFIX) + 43  # 32 bytes, base64url
    assert first.secret != second.secret and first.record.id != second.record.id
    assert first.record.reply_queues == ("team-replies", "other.fifo")
    assert store.digests == {hashlib.sha256(first.secret.encode()).hexdigest(): first.record.id,
                             digest_of(second.secret): second.record.id}
    assert first.secret not in repr(store.keys)


@pytest.mark.parametrize(("name", "queues"), [("", []), (" ", []), ("x" * 101, []), ("ok", ["bad name!"])])
async def test_bad_names_and_reply_queues_are_refused(name: str, queues: list[str]) -> None:
    store = InMemoryApiKeys()
    with pytest.raises(InvalidRequest):
        await create_key(name, queues, store)
    assert store.keys == {}


async def test_authenticate_accepts_only_active_known_keys() -> None:
    store = InMemoryApiKeys()
    issued = await create_key("team", [], store)
    assert (await authenticate(issued.secret, store)).id == issued.record.id
    with pytest.raises(MissingApiKey):
        await authenticate(None, store)
    with pytest.raises(MissingApiKey):
        await authenticate("", store)
    for wrong in (issued.secret[:-1], KEY_PREFIX + "x" * 43):
        with pytest.raises(InvalidApiKey):
            await authenticate(wrong, store)
    lookups = store.lookups
    for not_ours in ("sk-something", KEY_PREFIX + "x" * 300):
        with pytest.raises(InvalidApiKey):
            await authenticate(not_ours, store)
    assert store.lookups == lookups  # refused without touching the store


async def test_revocation_is_immediate_idempotent_and_keeps_the_first_time() -> None:
    store = InMemoryApiKeys()
    issued = await create_key("team", [], store)
    first = await revoke_key(issued.record.id, store, now=lambda: datetime(2030, 1, 1, tzinfo=timezone.utc))
    again = await revoke_key(issued.record.id, store)
    assert first.revoked and again.revoked_at == first.revoked_at
    with pytest.raises(InvalidApiKey):
        await authenticate(issued.secret, store)
    with pytest.raises(ApiKeyNotFound):
        await revoke_key("key_nope", store)


def test_a_bucket_allows_a_minutes_worth_then_says_when_to_retry() -> None:
    now = [0.0]
    buckets = TokenBuckets(60, clock=lambda: now[0])
    for _ in range(60):
        buckets.take("a")
    with pytest.raises(RateLimited) as limited:
        buckets.take("a")
    assert limited.value.retry_after == 1
    buckets.take("b")  # every key has its own bucket
    now[0] += 1.0
    buckets.take("a")
    with pytest.raises(RateLimited):
        buckets.take("a")
    now[0] += 3600
    for _ in range(60):  # refills to a minute's worth, no more
        buckets.take("a")
    with pytest.raises(RateLimited):
        buckets.take("a")


def test_retry_after_is_whole_seconds_at_slow_rates() -> None:
    buckets = TokenBuckets(1, clock=lambda: 0.0)
    buckets.take("a")
    with pytest.raises(RateLimited) as limited:
        buckets.take("a")
    assert limited.value.retry_after == 60


@pytest.mark.parametrize(
    ("mode", "host", "required"),
    [("auto", "127.0.0.1", False), ("auto", "localhost", False), ("auto", "::1", False), ("auto", "127.0.0.2", False),
     ("auto", "0.0.0.0", True), ("auto", "::", True), ("auto", "10.1.2.3", True), ("auto", "api.internal", True),
     ("required", "127.0.0.1", True), ("required", "0.0.0.0", True), ("off", "127.0.0.1", False), ("off", "[::1]", False)],
)
def test_auth_modes(mode: str, host: str, required: bool) -> None:
    assert auth_required(mode, host) is required


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", ""])
def test_auth_cannot_be_off_where_other_hosts_can_connect(host: str) -> None:
    with pytest.raises(UnsafeAuthSetting, match="loopback"):
        auth_required("off", host)


@pytest.mark.parametrize(
    ("headers", "key"),
    [({"authorization": "Bearer fs_abc"}, "fs_abc"), ({"authorization": "bearer  fs_abc "}, "fs_abc"),
     ({"x-api-key": "fs_abc"}, "fs_abc"), ({"authorization": "Bearer fs_a", "x-api-key": "fs_b"}, "fs_a"),
     ({"authorization": "Basic dXNlcjpwdw=="}, None), ({"authorization": "Bearer "}, None), ({}, None)],
)
def test_the_presented_key(headers: dict[str, str], key: str | None) -> None:
    assert presented_key(headers) == key
