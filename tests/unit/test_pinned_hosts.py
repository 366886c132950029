"""FIRMSIFT_HOMEPAGE_RESOLVE: host=ip[:port] pairs read exactly, anything else refused with its pair."""

from __future__ import annotations

import ipaddress
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from firmsift.domain.pinned_hosts import InvalidPinnedHosts, parse_pinned_hosts
from firmsift.entrypoints.settings import Settings


def test_pairs_are_read_with_and_without_ports() -> None:
    assert parse_pinned_hosts(" Acme.Example=127.0.0.1:8081, www.acme.example=127.0.0.1 ,v6.example=[::1]:8082,"
                              "bare.example=::1") == {
        "acme.example": ("127.0.0.1", 8081), "www.acme.example": ("127.0.0.1", None),
        "v6.example": ("::1", 8082), "bare.example": ("::1", None)}
    assert parse_pinned_hosts("") == {}


@pytest.mark.parametrize(("text", "problem"), [
    ("acme.example", "expected host=ip[:port]"),
    ("acme.example=localhost", "not an IP address"),
    ("acme.example=127.0.0.1:0", "port must be 1-65535"),
    ("acme.example=127.0.0.1:70000", "port must be 1-65535"),
    ("acme.example=127.0.0.1:", "port is empty"),
    ("acme.example=[::1]x", "expected [ipv6]:port"),
    ("localhost=127.0.0.1", "not a host name"),
    ("a_b.example=127.0.0.1", "not a host name"),
    ("a.example=127.0.0.1,A.example=127.0.0.2", "pinned twice"),
])
def test_malformed_pairs_are_refused_naming_the_pair(text: str, problem: str) -> None:
    with pytest.raises(InvalidPinnedHosts, match=re.escape(problem)):
        parse_pinned_hosts(text)


hosts = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?){1,3}", fullmatch=True)
addresses = st.one_of(st.ip_addresses(v=4), st.ip_addresses(v=6))
ports = st.one_of(st.none(), st.integers(1, 65535))


@given(st.dictionaries(hosts, st.tuples(addresses, ports), max_size=5))
def test_written_pairs_read_back(pinned: dict[str, tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int | None]]) -> None:
    def written(address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int | None) -> str:
        shown = f"[{address}]" if address.version == 6 and port is not None else str(address)
        return shown if port is None else f"{shown}:{port}"

    text = ",".join(f"{host}={written(address, port)}" for host, (address, port) in pinned.items())
    assert parse_pinned_hosts(text) == {host: (str(address), port) for host, (address, port) in pinned.items()}


@given(st.text(max_size=60))
def test_any_text_is_read_or_refused_with_a_clear_error(text: str) -> None:
    try:
        parse_pinned_hosts(text)
    except InvalidPinnedHosts as error:
        assert str(error)


def test_the_setting_is_honoured_only_with_private_addresses_allowed() -> None:
    with pytest.raises(ValidationError, match="only with FIRMSIFT_HOMEPAGE_ALLOW_PRIVATE_ADDRESSES=true"):
        Settings(homepage_resolve="acme.example=127.0.0.1:8081")
    settings = Settings(homepage_resolve="acme.example=127.0.0.1:8081", homepage_allow_private_addresses=True)
    assert settings.pinned_hosts == {"acme.example": ("127.0.0.1", 8081)}
    with pytest.raises(ValidationError, match="not an IP address"):
        Settings(dns_servers="127.0.0.1,dns.example")
    assert Settings(dns_servers=" 127.0.0.1, ::1").dns_server_list == ("127.0.0.1", "::1")
