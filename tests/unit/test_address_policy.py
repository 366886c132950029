"""The SSRF address check: which addresses a homepage fetch may reach, and name resolution."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.adapters.web.address_policy import first_refused, refusal_reason, resolve_addresses
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
        ("100.64.0.1", "shared address space"),
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


# --- the IANA special-purpose registries, as properties ----------------------------------

REFUSED_V4 = [
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
    "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
]
REFUSED_V6 = [
    "::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b:1::/48", "100::/64", "100:0:0:1::/64",
    "2001::/23", "2001::/32", "2001:db8::/32", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10",
    "fec0::/10", "ff00::/8",
]


def addresses_in(prefixes: list[str]) -> st.SearchStrategy[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    networks = [ipaddress.ip_network(prefix) for prefix in prefixes]
    return st.sampled_from(networks).flatmap(
        lambda net: st.integers(0, net.num_addresses - 1).map(lambda n: net.network_address + n)
    )


def is_listed(address: ipaddress.IPv4Address, prefixes: list[str]) -> bool:
    return any(address in ipaddress.ip_network(prefix) for prefix in prefixes)


PUBLIC_V4 = st.ip_addresses(v=4).filter(lambda a: not is_listed(a, REFUSED_V4) and a.is_global)
PRIVATE_V4 = addresses_in(REFUSED_V4)


def six_to_four(v4: ipaddress.IPv4Address, rest: int) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address((0x2002 << 112) | (int(v4) << 80) | rest)


def nat64(v4: ipaddress.IPv4Address) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(v4))


def teredo(server: ipaddress.IPv4Address, client: ipaddress.IPv4Address, port: int) -> ipaddress.IPv6Address:
    # 2001:0:server:flags:~port:~client, as RFC 4380 lays it out (port and client obfuscated).
    return ipaddress.IPv6Address(
        (0x20010000 << 96) | (int(server) << 64) | ((~port & 0xFFFF) << 32) | (~int(client) & 0xFFFFFFFF)
    )


@given(addresses_in(REFUSED_V4 + REFUSED_V6))
def test_every_special_purpose_address_is_refused(address: ipaddress.IPv4Address) -> None:
    assert refusal_reason(str(address)) is not None


@given(PRIVATE_V4, st.integers(0, 2**80 - 1))
def test_a_refused_ipv4_address_is_refused_inside_any_ipv6_form(v4: ipaddress.IPv4Address, rest: int) -> None:
    forms = [ipaddress.IPv6Address(f"::ffff:{v4}"), six_to_four(v4, rest), nat64(v4),
             teredo(ipaddress.IPv4Address("65.54.227.120"), v4, rest & 0xFFFF)]
    for form in forms:
        assert form.teredo is None or form.teredo[1] == v4 or form.sixtofour == v4
        reason = refusal_reason(str(form)) or ""
        assert reason.endswith(f"(embedded in {form})"), (form, reason)


@given(PUBLIC_V4, st.integers(0, 2**80 - 1))
def test_public_ipv4_passes_alone_through_nat64_and_6to4(v4: ipaddress.IPv4Address, rest: int) -> None:
    assert refusal_reason(str(v4)) is None
    assert refusal_reason(str(nat64(v4))) is None
    assert refusal_reason(str(six_to_four(v4, rest))) is None
    # Mapped and Teredo forms have no business in DNS answers: refused whatever they carry.
    assert refusal_reason(f"::ffff:{v4}") == "IPv4-mapped"
    assert refusal_reason(str(teredo(v4, v4, 80))) == "IETF protocol assignments"


@given(st.ip_addresses(v=6))
def test_ipv6_outside_global_unicast_is_refused(address: ipaddress.IPv6Address) -> None:
    outside = address not in ipaddress.ip_network("2000::/3") and address not in ipaddress.ip_network("64:ff9b::/96")
    if outside:
        assert refusal_reason(str(address)) is not None


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("fec0::1", "deprecated site-local"),
        ("feff:ffff::1", "deprecated site-local"),
        ("192.0.0.9", "IETF protocol assignments"),
        ("198.19.255.255", "benchmarking"),
        ("255.255.255.255", "reserved"),
        ("64:ff9b:1::808:808", "local-use IPv4/IPv6 translation"),
        ("2001:2::1", "IETF protocol assignments"),
        ("3fff::1", "documentation"),
        ("5f00::1", "segment routing (SRv6) identifiers"),
        ("4000::1", "not global unicast"),
    ],
)
def test_registry_blocks_name_their_reason(address: str, reason: str) -> None:
    assert refusal_reason(address) == reason


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", "2a00:1450:4001::200e"])
def test_public_ipv6_forms_pass(address: str) -> None:
    assert refusal_reason(address) is None
