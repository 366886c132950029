"""Normalization: examples from DESIGN.md and hypothesis properties."""

import gc
import re
import time
import unicodedata
from unittest import mock

import idna
import pytest
from hypothesis import given, settings, strategies as st

from firmsift.domain import normalize
from firmsift.domain.errors import InvalidDomains
from firmsift.domain.normalize import (
    MAX_UNICODE_LABEL,
    MAX_WRITTEN_LABEL,
    MAX_WRITTEN_NAME,
    DomainRejected,
    normalize_domain,
    normalize_domains,
)


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
        ("www." * 60 + "example.com", "example.com"),  # 251 characters: stripped
        ("//example.com/a", "example.com"),
        ("münchen.de", "xn--mnchen-3ya.de"),
        ("https://BÜCHER.example/", None),  # .example is reserved
        ("例え.jp", "xn--r8jz45g.jp"),
        ("example.com:", "example.com"),
        ("xn--mnchen-3ya.de", "xn--mnchen-3ya.de"),
        # UTS #46 nontransitional (IDNA 2008): "ß" is its own letter, not "ss" as in IDNA 2003,
        # so straße.de and strasse.de stay two registrable domains, and the A-label is accepted.
        ("straße.de", "xn--strae-oqa.de"),
        ("STRASSE.de", "strasse.de"),
        ("xn--strae-oqa.de", "xn--strae-oqa.de"),
        ("faß.de", "xn--fa-hia.de"),
        ("ＥＸＡＭＰＬＥ。com", "example.com"),  # fullwidth letters and ideographic full stop are mapped
        ("BÜCHER.de", "xn--bcher-kva.de"),
        ("bu\u0308cher.de", "xn--bcher-kva.de"),  # decomposed ü: NFC first
        ("a\u00adb.com", "ab.com"),  # a soft hyphen is ignored by UTS #46
        ("https://a.com:0443/x", "a.com"),
        ("\u00e9" * 56 + ".fr", "xn--" + "9ca" + "a" * 55 + ".fr"),  # 56 code points fit in 63 octets
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
        ("xn--n3h.com", "punycode"),  # the A-label of "☃": valid in IDNA 2003, not in IDNA 2008
        ("☃.com", "internationalized"),  # symbols were valid in IDNA 2003, not in IDNA 2008
        ("a\u200db.com", "internationalized"),  # a zero-width joiner outside the scripts that need it
        # Ports in digits int() refuses (superscripts, circled) or that HTTP does not know (other scripts).
        ("a.com:\u00b2", "port"),
        ("https://a.com:\u2460/x", "port"),
        ("a.com:\uff18\uff10", "port"),
        ("a.com:\u0663", "port"),
        ("a.com:" + "9" * 5000, "port"),  # more digits than int() reads
        ("a.com:+80", "port"),
        ("\u00e9" * 60 + ".fr", "longer than 63"),
        ("一丁" * 30 + ".cn", "longer than 63"),  # 60 code points: 64 octets at the very least
        ("\u00e9" * (MAX_WRITTEN_LABEL + 1) + ".fr", "longer than 63"),
        ("\u00e9" * 16000 + ".com", "longer than 253"),
        (".".join(["\u00e9" * 50] * 5) + ".com", "longer than 253"),
        ("www." * 16000 + "com", "longer than 253"),  # not stripped down to www.com
        ("www." * 62 + "example.com", "longer than 253"),
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


def test_a_reason_quotes_at_most_a_short_part_of_the_value() -> None:
    with pytest.raises(DomainRejected) as raised:
        normalize_domain("a.com:" + "x" * 10_000)
    assert len(str(raised.value)) < 120


# Long values of every kind of character: letters of any script, combining marks, characters
# UTS #46 ignores, dots of every kind, digits; up to ~65,000 code points (a whole body).
_ANY_CHARACTER = st.characters(exclude_categories=["Cs"])
_PIECE = st.one_of(
    st.text(_ANY_CHARACTER, min_size=1, max_size=8),
    st.sampled_from([".", "\u3002", "\u00ad", "\ufe0f", "\u0301", "-", "xn--", ":", "//", "www."]),
)
_LONG_VALUE = st.builds(lambda pieces, times: "".join(pieces) * times,
                        st.lists(_PIECE, min_size=1, max_size=12), st.integers(1, 8_000)).map(lambda s: s[:65_000])


@settings(max_examples=300, deadline=None)
@given(st.one_of(_LONG_VALUE, st.text(_ANY_CHARACTER, max_size=300)))
def test_the_work_for_any_value_is_bounded_before_mapping_and_before_encoding(raw: str) -> None:
    """The cost of a value does not grow with its length: UTS #46 mapping only ever sees a label
    of at most MAX_WRITTEN_LABEL code points (and a name of at most MAX_WRITTEN_NAME), punycode only
    a label of at most MAX_UNICODE_LABEL; and one value costs little CPU whatever its length (the
    bound is generous, 50 ms against ~1 ms at worst measured, and the collector is held off while
    it is timed, so the test measures normalization rather than the machine)."""
    with mock.patch.object(idna, "uts46_remap", wraps=idna.uts46_remap) as remap, \
            mock.patch.object(normalize, "encode_within", wraps=normalize.encode_within) as punycode:
        gc.disable()
        try:
            started = time.process_time()
            try:
                normalize_domain(raw)
            except DomainRejected:
                pass
            spent = time.process_time() - started
        finally:
            gc.enable()
    mapped = [len(call.args[0]) for call in remap.call_args_list]
    assert all(length <= MAX_WRITTEN_LABEL for length in mapped), mapped
    assert sum(mapped) <= MAX_WRITTEN_NAME
    assert all(len(call.args[0]) <= MAX_UNICODE_LABEL for call in punycode.call_args_list)
    assert spent < 0.050, f"{spent * 1000:.1f} ms for a value of {len(raw)} code points"


_DIGIT_NOT_ASCII = st.characters(categories=["Nd", "No", "Nl"]).filter(lambda c: not c.isascii())


@given(st.text(_DIGIT_NOT_ASCII, min_size=1, max_size=6), st.sampled_from(["", "https://", "//u@"]),
       st.sampled_from(["", "/x", "?q"]), st.text("0123456789", max_size=3))
def test_a_port_with_any_non_ascii_digit_is_refused_with_a_reason(digits: str, scheme: str, tail: str,
                                                                  ascii_digits: str) -> None:
    for port in (digits, ascii_digits + digits, digits + ascii_digits):
        with pytest.raises(DomainRejected, match="port"):
            normalize_domain(f"{scheme}a.com:{port}{tail}")


@given(st.text(_ANY_CHARACTER, max_size=40))
def test_canonically_equivalent_spellings_normalize_alike(raw: str) -> None:
    """NFC and NFD of one value are the same name to UTS #46: both give one answer or both refuse."""
    outcomes = []
    for form in ("NFC", "NFD"):
        try:
            outcomes.append(normalize_domain(unicodedata.normalize(form, raw)))
        except DomainRejected:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1]
