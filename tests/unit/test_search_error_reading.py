"""Reading search providers' error answers: Brave's rate-limit headers, SearXNG's failed engines,
error codes. All of it comes from outside, so any input must give an answer, never an exception."""

from __future__ import annotations

import httpx
from hypothesis import given
from hypothesis import strategies as st

from firmsift.adapters.search.api import error_code
from firmsift.adapters.search.brave import window_wait
from firmsift.adapters.search.searxng import ENGINE_CHARS, ENGINES_NAMED, failed_engines

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20)


def headers(remaining: str | None, reset: str | None) -> httpx.Headers:
    pairs = {"x-ratelimit-remaining": remaining, "x-ratelimit-reset": reset}
    return httpx.Headers({name: value for name, value in pairs.items() if value is not None})


def test_the_spent_window_says_how_long_to_wait() -> None:
    assert window_wait(headers("0, 1543", "1, 1419704")) == 1.0
    assert window_wait(headers("1, 0", "1, 1419704")) == 1419704.0
    assert window_wait(headers("0, 0", "1, 1419704")) == 1419704.0  # both spent: the longer wait


def test_without_a_spent_window_the_shortest_reset_is_the_wait() -> None:
    assert window_wait(headers("1, 1543", "1, 1419704")) == 1.0
    assert window_wait(headers(None, "3, 1419704")) == 3.0
    assert window_wait(headers("0", "1, 1419704")) == 1.0  # the windows do not line up


def test_missing_or_unreadable_resets_are_no_wait() -> None:
    assert window_wait(headers("0, 0", None)) is None
    assert window_wait(headers("0", "soon")) is None
    assert window_wait(headers("0", "-1")) is None
    assert window_wait(headers("0", "1e9")) is None


@given(st.text(alphabet="0123456789, -.e", max_size=30), st.text(alphabet="0123456789, -.e", max_size=30))
def test_any_rate_limit_headers_give_a_wait_or_none(remaining: str, reset: str) -> None:
    wait = window_wait(headers(remaining, reset))
    assert wait is None or wait >= 0


def test_failed_engines_are_named_with_why() -> None:
    assert failed_engines([["brave", "HTTP connection error"], ["wikipedia", "Suspended: timeout"]]) == (
        "brave (HTTP connection error), wikipedia (Suspended: timeout)")
    assert failed_engines([]) == ""
    assert failed_engines([["only a name"], "ab", ["a", 3], ("a", "b")]) == ""
    assert failed_engines("ab") == ""


def test_a_long_list_of_failed_engines_is_cut() -> None:
    named = failed_engines([[f"engine{n}", "timeout"] for n in range(ENGINES_NAMED + 3)])
    assert named.endswith(f"engine{ENGINES_NAMED - 1} (timeout) and 3 more")


@given(JSON)
def test_any_unresponsive_engines_value_is_read_within_bounds(value: object) -> None:
    named = failed_engines(value)
    assert len(named) <= ENGINES_NAMED * (2 * ENGINE_CHARS + 5) + 20


@given(JSON)
def test_only_code_shaped_strings_are_error_codes(body: object) -> None:
    code = error_code(body, "error", "code")
    assert code is None or (code.isupper() and " " not in code and len(code) <= 64)


def test_an_error_code_is_read_where_the_provider_puts_it() -> None:
    assert error_code({"error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}, "error", "code") == (
        "SUBSCRIPTION_TOKEN_INVALID")
    assert error_code({"error": {"code": "bad key tvly-123"}}, "error", "code") is None
    assert error_code({"error": "RATE_LIMITED"}, "error", "code") is None
    assert error_code(None, "error", "code") is None
