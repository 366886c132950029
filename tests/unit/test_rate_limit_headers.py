"""Reading a provider's x-ratelimit-* headers: Go-style durations, litellm's prefixed copies, bad values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.domain.rate_limit_headers import RateLimitHeaders, duration_seconds, read_rate_limit_headers


@pytest.mark.parametrize(("text", "seconds"), [
    ("6m0s", 360.0), ("1s", 1.0), ("120ms", 0.12), ("1h2m3.5s", 3723.5), ("59.998s", 59.998),
    ("20", 20.0), ("0.5", 0.5), ("0s", 0.0), ("1m", 60.0),
])
def test_durations_as_openai_writes_them(text: str, seconds: float) -> None:
    assert duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "-1s", "1x", "1s1s", "1m 2s", "abc", "1.s", "inf", "1e3"])
def test_unreadable_durations_are_none(text: str) -> None:
    assert duration_seconds(text) is None


@given(hours=st.integers(0, 48), minutes=st.integers(0, 59), millis=st.integers(0, 59_999))
def test_a_written_duration_reads_back(hours: int, minutes: int, millis: int) -> None:
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + f"{millis / 1000:g}s"
    assert duration_seconds(text) == pytest.approx(hours * 3600 + minutes * 60 + millis / 1000)


def test_openais_headers_are_read() -> None:
    headers = {
        "X-RateLimit-Limit-Requests": "500", "x-ratelimit-limit-tokens": "200000",
        "x-ratelimit-remaining-requests": "499", "x-ratelimit-remaining-tokens": "199000",
        "x-ratelimit-reset-requests": "120ms", "x-ratelimit-reset-tokens": "6m0s", "content-type": "x",
    }
    assert read_rate_limit_headers(headers) == RateLimitHeaders(500, 200000, 499, 199000, 0.12, 360.0)


def test_litellms_raw_provider_copy_wins_over_its_openai_copy() -> None:
    headers = {"x-ratelimit-limit-requests": "100", "llm_provider-x-ratelimit-limit-requests": "90",
               "llm_provider-x-ratelimit-remaining-tokens": "7"}
    assert read_rate_limit_headers(headers) == RateLimitHeaders(limit_requests=90, remaining_tokens=7)


@pytest.mark.parametrize("headers", [None, {}, {"content-type": "application/json"},
                                     {"x-ratelimit-limit-requests": "0"},
                                     {"x-ratelimit-remaining-tokens": "-3", "x-ratelimit-reset-tokens": "soon"},
                                     {"x-ratelimit-limit-tokens": "١٢"}])
def test_headers_without_a_readable_limit_field_are_none(headers: dict[str, str] | None) -> None:
    assert read_rate_limit_headers(headers) is None


@given(st.dictionaries(st.text(max_size=40), st.text(max_size=40), max_size=8))
def test_any_headers_read_without_error(headers: dict[str, str]) -> None:
    read = read_rate_limit_headers(headers)
    assert read is None or isinstance(read, RateLimitHeaders)
