"""Normalization: examples from DESIGN.md and hypothesis properties."""

import re

import pytest
from hypothesis import given, strategies as st

from firmsift.domain.errors import InvalidDomains
from firmsift.domain.normalize import DomainRejected, normalize_domain, normalize_domains


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Example.COM", "example.com"),
        ("  example.com  ", "example.com"),
        ("https://www.example.com/path?q=1#frag", "example.com"),
        ("http://user:pw@shop.example.co.uk:8443/x", "shop.example.co.uk"),
        ("example.com.", "example.com"),
        ("www.www.example.com", "example.com"),
        ("www.com", "www.com"),
        ("//example.com/a", "example.com"),
        ("münchen.de", "xn--mnchen-3ya.de"),
        ("https://BÜCHER.example/", None),  # .example is reserved
        ("例え.jp", "xn--r8jz45g.jp"),
        ("example.com:", "example.com"),
        ("xn--mnchen-3ya.de", "xn--mnchen-3ya.de"),
    ],
)
def test_examples(raw: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(DomainRejected):
            normalize_domain(raw)
    else:
        assert normalize_domain(raw) == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("localhost", "single label"),
        ("192.168.1.1", "IP address"),
        ("http://[::1]:80/", "IP address"),
        ("::1", "IP address"),
        ("a..b.com", "empty label"),
        ("example.com..", "empty label"),
        ("-bad.com", "characters"),
        ("bad_.com", "characters"),
        ("under_score.com", "characters"),
        ("exa mple.com", "whitespace"),
        ("a" * 64 + ".com", "longer than 63"),
        (".".join(["a" * 60] * 5) + ".com", "longer than 253"),
        ("example.123", "top-level"),
        ("printer.local", "special use"),
        ("example.com:99999", "port"),
        ("xn--zz.com", "punycode"),
        (42, "string"),
        (None, "string"),
    ],
)
def test_rejections_name_a_reason(raw: object, reason: str) -> None:
    with pytest.raises(DomainRejected, match=reason):
        normalize_domain(raw)


def test_normalize_domains_dedupes_in_first_seen_order_and_lists_every_rejection() -> None:
    assert normalize_domains(["B.com", "a.com", "https://b.com/x", "www.a.com"]) == ["b.com", "a.com"]
    with pytest.raises(InvalidDomains) as raised:
        normalize_domains(["ok.com", "localhost", 7, "1.2.3.4"])
    assert [r.value for r in raised.value.rejections] == ["localhost", 7, "1.2.3.4"]
    assert all(r.reason for r in raised.value.rejections)


_VALID = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+([a-z]{2,63}|xn--[a-z0-9-]+)$")
label = st.from_regex(r"[a-zA-Z0-9][a-zA-Z0-9-]{0,10}[a-zA-Z0-9]", fullmatch=True)
hostish = st.lists(label, min_size=2, max_size=4).map(".".join)
decorated = st.tuples(
    st.sampled_from(["", "http://", "HTTPS://", "//", "ftp://user@"]),
    st.sampled_from(["", "www.", "WWW."]),
    hostish,
    st.sampled_from(["", ".", ":8080", "/path", "?q=1", "#x", ":443/a?b#c"]),
).map("".join)


@given(st.one_of(st.text(max_size=80), decorated))
def test_output_is_valid_or_rejected_with_a_reason(raw: str) -> None:
    try:
        result = normalize_domain(raw)
    except DomainRejected as rejected:
        assert str(rejected)
    else:
        assert _VALID.match(result), result
        assert not result.startswith("www.") or result.count(".") == 1


@given(st.one_of(st.text(max_size=80), decorated))
def test_normalization_is_idempotent(raw: str) -> None:
    try:
        once = normalize_domain(raw)
    except DomainRejected:
        return
    assert normalize_domain(once) == once


@given(decorated)
def test_decoration_does_not_change_the_host(raw: str) -> None:
    try:
        result = normalize_domain(raw)
    except DomainRejected:
        return
    assert result in raw.lower()
