"""Unknown API keys cost a database lookup each, so they are limited per client address."""

import pytest

from firmsift.adapters.memory.keys import InMemoryApiKeys
from firmsift.domain.keys import InvalidApiKey
from firmsift.entrypoints.http.auth import Gate, client_network
from firmsift.entrypoints.http.rate_limit import RateLimited, TokenBuckets
from firmsift.services.keys import create_key, revoke_key


def gate_with(keys: InMemoryApiKeys, now: list[float], per_minute: int = 3) -> Gate:
    return Gate(keys, None, TokenBuckets(per_minute, clock=lambda: now[0], holder="unknown API keys from this address"))


def headers(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}"}


@pytest.mark.anyio
async def test_an_address_sending_unknown_keys_is_refused_without_a_lookup_until_its_bucket_refills() -> None:
    keys, now = InMemoryApiKeys(), [0.0]
    gate = gate_with(keys, now)
    for n in range(3):
        with pytest.raises(InvalidApiKey):
            await gate.caller(headers(f"fs_guess{n}"), "203.0.113.7")
    assert keys.lookups == 3
    with pytest.raises(RateLimited) as limited:
        await gate.caller(headers("fs_guess4"), "203.0.113.7")
    assert keys.lookups == 3 and limited.value.retry_after == 20
    assert "unknown API keys from this address" in str(limited.value)
    with pytest.raises(InvalidApiKey):  # another address has its own allowance
        await gate.caller(headers("fs_guess5"), "198.51.100.1")
    now[0] += 20
    with pytest.raises(InvalidApiKey):
        await gate.caller(headers("fs_guess6"), "203.0.113.7")


@pytest.mark.anyio
async def test_a_valid_key_behind_the_same_address_keeps_working_and_a_revoked_one_is_screened_again() -> None:
    keys, now = InMemoryApiKeys(), [0.0]
    gate = gate_with(keys, now, per_minute=1)
    issued = await create_key("team", [], keys)
    assert (await gate.caller(headers(issued.secret), "10.0.0.1")).owner == issued.record.id
    with pytest.raises(InvalidApiKey):
        await gate.caller(headers("fs_garbage"), "10.0.0.1")  # a neighbour behind the same NAT
    assert (await gate.caller(headers(issued.secret), "10.0.0.1")).owner == issued.record.id
    await revoke_key(issued.record.id, keys)
    with pytest.raises(InvalidApiKey):
        await gate.caller(headers(issued.secret), "10.0.0.1")
    lookups = keys.lookups
    with pytest.raises(RateLimited):
        await gate.caller(headers(issued.secret), "10.0.0.1")
    assert keys.lookups == lookups


def test_ipv6_clients_are_limited_by_their_64() -> None:
    assert client_network("2001:db8:1:2:aaaa::1") == client_network("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_network("::ffff:192.0.2.1") == "192.0.2.1"
    assert client_network("203.0.113.7") == "203.0.113.7"
    assert client_network("testclient") == "testclient"


def test_buckets_are_bounded_least_recently_used_first() -> None:
    buckets = TokenBuckets(1, clock=lambda: 0.0, max_buckets=2)
    for address in ("a", "b", "c"):
        buckets.take(address)
    assert list(buckets.buckets) == ["b", "c"]
