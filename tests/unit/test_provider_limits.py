"""The scripted provider's limits: buckets of one minute's worth refilled continuously, headers
the pacing rules can read, and 429 with Retry-After when a request does not fit."""

from __future__ import annotations

import pytest

from firmsift.domain.rate_limit_headers import read_rate_limit_headers
from tests.support.clocks import Clock
from tests.support.provider_limits import ProviderLimits, go_duration


def test_requests_beyond_the_bucket_are_refused_until_it_refills() -> None:
    clock = Clock()
    limits = ProviderLimits(60, 10_000, clock=clock)
    assert all(limits.charge(10)[0] for _ in range(60))
    allowed, headers = limits.charge(10)
    assert not allowed and dict(headers)["retry-after"] == "1"
    read = read_rate_limit_headers(dict(headers))
    assert read is not None and (read.limit_requests, read.remaining_requests) == (60, 0)
    clock.now = 1.0  # one request refilled
    assert limits.charge(10)[0] and not limits.charge(10)[0]
    assert (limits.accepted, limits.refused, limits.tokens) == (61, 2, 610)


def test_tokens_bind_too() -> None:
    clock = Clock()
    limits = ProviderLimits(1000, 600, clock=clock)
    assert limits.charge(500)[0]
    allowed, headers = limits.charge(500)
    assert not allowed and dict(headers)["retry-after"] == "40"  # 400 tokens at 10 a second
    read = read_rate_limit_headers(dict(headers))
    assert read is not None and read.remaining_tokens == 100 and read.reset_tokens == pytest.approx(50)


@pytest.mark.parametrize(("seconds", "text"), [(0.12, "120ms"), (1.5, "1.5s"), (360, "6m0s"), (61.25, "1m1.25s")])
def test_durations_are_written_as_openai_writes_them(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
