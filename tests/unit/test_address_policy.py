"""The SSRF address check: which addresses a homepage fetch may reach, and name resolution."""

from __future__ import annotations

import asyncio
import socket

import pytest

from firmsift.adapters.address_policy import first_refused, refusal_reason, resolve_addresses
from firmsift.domain.errors import ProviderError


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("fd00::1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("100.64.0.1", "not globally routable"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.1.2.3", "private"),
        ("2002:7f00:1::", "loopback"),  # 6to4 around 127.0.0.1
        ("64:ff9b::a00:1", "private"),  # NAT64 around 10.0.0.1
    ],
)
def test_non_public_addresses_are_refused(address: str, reason: str) -> None:
    assert (refusal_reason(address) or "").startswith(reason)


@pytest.mark.parametrize("address", ["240.0.0.1", "255.255.255.255", "192.0.2.1", "2001:db8::1"])
def test_reserved_and_documentation_ranges_are_refused(address: str) -> None:
    assert refusal_reason(address) is not None


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal_reason(address) is None


def test_garbage_is_refused() -> None:
    assert refusal_reason("not-an-ip") == "not an IP address"


def test_one_bad_address_refuses_the_host() -> None:
    assert first_refused(["8.8.8.8", "10.0.0.1", "127.0.0.1"]) == ("10.0.0.1", "private")
    assert first_refused(["8.8.8.8", "1.1.1.1"]) is None
    assert first_refused([]) is None


@pytest.mark.anyio
async def test_resolves_ip_literals_and_localhost_without_dns() -> None:
    assert await resolve_addresses("127.0.0.1", 80) == ["127.0.0.1"]
    assert set(await resolve_addresses("localhost", 80)) <= {"127.0.0.1", "::1"}


@pytest.mark.anyio
async def test_resolution_goes_through_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fake_getaddrinfo(host: str, port: int, **kwargs: object) -> list[tuple]:
        assert (host, port, kwargs.get("type")) == ("shop.example.com", 443, socket.SOCK_STREAM)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", 443)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", 443)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2606:2800::1", 443, 0, 0)),
        ]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", fake_getaddrinfo)
    assert await resolve_addresses("shop.example.com", 443) == ["93.184.215.14", "2606:2800::1"]


@pytest.mark.anyio
async def test_resolution_failure_is_a_provider_error(monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing_getaddrinfo(*args: object, **kwargs: object) -> list[tuple]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", failing_getaddrinfo)
    with pytest.raises(ProviderError, match="could not resolve nowhere.example.com"):
        await resolve_addresses("nowhere.example.com", 443)
