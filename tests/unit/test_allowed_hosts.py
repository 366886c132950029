"""FIRMSIFT_ALLOWED_HOSTS and the Host header: read in the form they are compared in (case, port,
IPv6 brackets, a trailing dot), the default by API keys and the listening address, and the
middleware refusing any other host with 421 in the contract's JSON, the health probes excepted."""

from __future__ import annotations

import json

import anyio
import pytest
from pydantic import ValidationError

from firmsift.domain.allowed_hosts import LOOPBACK_NAMES, InvalidAllowedHosts, host_name, parse_allowed_hosts, served_hosts
from firmsift.entrypoints.http.host_check import HostCheck
from firmsift.entrypoints.settings import Settings


@pytest.mark.parametrize(("header", "name"), [
    ("localhost", "localhost"), ("LocalHost", "localhost"), ("localhost.", "localhost"),
    ("localhost:8000", "localhost"), ("LOCALHOST.:8000", "localhost"), ("localhost:", "localhost"),
    ("127.0.0.1", "127.0.0.1"), ("127.0.0.1:8000", "127.0.0.1"), ("[::1]", "::1"), ("[::1]:8000", "::1"),
    ("[::1]:", "::1"), ("[0:0:0:0:0:0:0:1]:80", "::1"), ("[FE80::A]", "fe80::a"),
    ("firmsift.example.com", "firmsift.example.com"), ("my_host.internal:1", "my_host.internal"),
])
def test_a_host_header_names_the_host_it_looks_like(header: str, name: str) -> None:
    assert host_name(header) == name


@pytest.mark.parametrize("header", [
    "", ":8000", "::1", "[::1", "[::1]x", "[::1]:80x", "[127.0.0.1]", "localhost:port", "localhost:123456",
    "localhost..", ".localhost", "local host", "localhost\t", "user@localhost", "localhost/x", "127.0.0.1:80:80",
    "xn--caf-dma.example\u00e9", "\u212aube.example",  # a Kelvin sign lower-cases to an ASCII k: still not ASCII
])
def test_anything_else_names_no_host(header: str) -> None:
    assert host_name(header) is None


def test_the_setting_lists_names_and_addresses_in_the_compared_form() -> None:
    assert parse_allowed_hosts(" Firmsift.Example.COM. , 10.0.0.5,::1,[FE80::A], localhost") == frozenset(
        {"firmsift.example.com", "10.0.0.5", "::1", "fe80::a", "localhost"})
    assert parse_allowed_hosts("*") is None
    assert parse_allowed_hosts("a.example, *") is None


@pytest.mark.parametrize("text", [" , ", "firmsift.example.com:8000", "[::1]:8000", "*.example.com", "caf\u00e9.fr",
                                  "a b"])
def test_a_malformed_setting_is_refused_naming_the_entry(text: str) -> None:
    with pytest.raises(InvalidAllowedHosts):
        parse_allowed_hosts(text)


def test_settings_refuse_a_malformed_list_and_read_an_empty_one_as_unset() -> None:
    with pytest.raises(ValidationError, match="(?s)allowed_hosts.*'firmsift.example.com:8000' is not a host name"):
        Settings(allowed_hosts="firmsift.example.com:8000")
    assert Settings(allowed_hosts="  ").allowed_hosts is None


def test_the_default_is_the_loopback_names_and_the_address_listened_on_while_keys_are_off() -> None:
    assert LOOPBACK_NAMES == {"localhost", "127.0.0.1", "::1"}
    assert served_hosts(None, "127.0.0.1", keys_required=False) == LOOPBACK_NAMES
    assert served_hosts(None, "127.0.0.2", keys_required=False) == LOOPBACK_NAMES | {"127.0.0.2"}
    assert served_hosts(None, "::1", keys_required=False) == LOOPBACK_NAMES
    # With keys a rebound page can do no more than any client: any host, unless the setting lists them.
    assert served_hosts(None, "0.0.0.0", keys_required=True) is None
    assert served_hosts("firmsift.example.com", "0.0.0.0", keys_required=True) == {"firmsift.example.com"}
    assert served_hosts("firmsift.example.com", "127.0.0.1", keys_required=False) == {"firmsift.example.com"}
    assert served_hosts("*", "127.0.0.1", keys_required=False) is None


def answer(allowed: frozenset[str] | None, path: str, *hosts: bytes) -> tuple[int, dict | None]:
    """What HostCheck answers a request with these Host headers; (200, None) when it let it through."""
    sent: list[dict] = []

    async def app(scope, receive, send) -> None:  # noqa: ANN001
        sent.append({"type": "http.response.start", "status": 200})

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": path, "headers": [(b"host", h) for h in hosts],
             "query_string": b""}
    anyio.run(HostCheck(app, allowed), scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(body) if body else None


def test_the_middleware_refuses_another_host_with_421_naming_the_setting() -> None:
    assert answer(LOOPBACK_NAMES, "/batches", b"localhost:8000") == (200, None)
    assert answer(LOOPBACK_NAMES, "/batches", b"[::1]:8000") == (200, None)
    status, body = answer(LOOPBACK_NAMES, "/batches", b"attacker.example:8000")
    assert status == 421 and body is not None and body["error"]["code"] == "host_not_allowed"
    message = body["error"]["message"]
    assert "'attacker.example:8000'" in message and "FIRMSIFT_ALLOWED_HOSTS" in message
    for hosts in ((), (b"localhost", b"attacker.example"), (b"localhost", b"localhost"), (b"x" * 10_000,)):
        status, body = answer(LOOPBACK_NAMES, "/", *hosts)
        assert status == 421 and body is not None and len(body["error"]["message"]) < 300


def test_the_health_probes_answer_any_host_and_star_lets_every_host_through() -> None:
    for path in ("/healthz", "/readyz"):
        assert answer(LOOPBACK_NAMES, path, b"10.1.2.3:8000") == (200, None)
        assert answer(LOOPBACK_NAMES, path) == (200, None)
    assert answer(LOOPBACK_NAMES, "/metrics", b"10.1.2.3:8000")[0] == 421
    assert answer(None, "/batches", b"attacker.example") == (200, None)
