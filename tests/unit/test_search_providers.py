"""FIRMSIFT_SEARCH_PROVIDER: one provider or a chain of them, checked whole at start-up."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr, ValidationError

from firmsift.domain.search_providers import SEARCH_PROVIDERS, InvalidSearchProviders, parse_search_providers
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.startup_errors import startup_error_line

chains = st.lists(st.sampled_from(SEARCH_PROVIDERS), min_size=1, max_size=4, unique=True)


def spelled(names: list[str], data: st.DataObject) -> str:
    """`names` as a person might write them: any case, spaces around each."""
    blank = st.text(alphabet=" \t", max_size=2)
    return ",".join(data.draw(blank) + "".join(c.upper() if data.draw(st.booleans()) else c for c in name)
                    + data.draw(blank) for name in names)


@given(names=chains, data=st.data())
def test_any_chain_of_known_providers_reads_back_in_its_order(names: list[str], data: st.DataObject) -> None:
    assert parse_search_providers(spelled(names, data)) == tuple(names)


@given(names=chains, data=st.data())
def test_a_provider_named_twice_is_refused_naming_both_entries(names: list[str], data: st.DataObject) -> None:
    repeated = data.draw(st.sampled_from(names))
    at = data.draw(st.integers(min_value=0, max_value=len(names)))
    with pytest.raises(InvalidSearchProviders) as raised:
        parse_search_providers(",".join([*names[:at], repeated, *names[at:]]))
    first, second = sorted(i + 1 for i, n in enumerate([*names[:at], repeated, *names[at:]]) if n == repeated)
    assert f"entry {second} ({repeated!r}) repeats entry {first}" in str(raised.value)


@given(names=chains, unknown=st.from_regex(r"[a-z0-9_-]{1,40}", fullmatch=True), data=st.data())
def test_an_unknown_name_is_refused_and_quoted(names: list[str], unknown: str, data: st.DataObject) -> None:
    if unknown in SEARCH_PROVIDERS:
        return
    at = data.draw(st.integers(min_value=0, max_value=len(names)))
    with pytest.raises(InvalidSearchProviders) as raised:
        parse_search_providers(",".join([*names[:at], unknown, *names[at:]]))
    assert str(raised.value).startswith(f"entry {at + 1} ({unknown!r}) is not a search provider; known: homepage")


@given(text=st.text(min_size=1).filter(lambda t: "," not in t and not t.strip().lower().isascii()))
def test_an_entry_that_is_not_a_name_is_never_echoed(text: str) -> None:
    with pytest.raises(InvalidSearchProviders) as raised:
        parse_search_providers(f"homepage,{text}")
    assert str(raised.value) == "entry 2 is not a search provider; known: homepage, searxng, tavily, brave"


@pytest.mark.parametrize(("value", "entry"), [("", 1), ("homepage,", 2), (",searxng", 1), ("homepage,,brave", 2),
                                              (" , ", 1)])
def test_an_empty_entry_is_refused(value: str, entry: int) -> None:
    with pytest.raises(InvalidSearchProviders, match=f"^entry {entry} is empty"):
        parse_search_providers(value)


# --- the setting -----------------------------------------------------------------------------

def test_a_single_name_keeps_working() -> None:
    assert Settings().search_provider == "homepage" and Settings().search_providers == ("homepage",)
    settings = Settings(search_provider="searxng", searxng_url="http://127.0.0.1:8888")
    assert settings.search_providers == ("searxng",)


def test_a_chain_is_kept_in_order_and_spelled_canonically() -> None:
    settings = Settings(search_provider=" Tavily , homepage,BRAVE", tavily_api_key=SecretStr("k1"),
                        brave_api_key=SecretStr("k2"))
    assert settings.search_provider == "tavily,homepage,brave"
    assert settings.search_providers == ("tavily", "homepage", "brave")


@pytest.mark.parametrize(("value", "message"), [
    ("homepage,serxng", "FIRMSIFT_SEARCH_PROVIDER: entry 2 ('serxng') is not a search provider; known: homepage, "
                        "searxng, tavily, brave"),
    ("homepage,homepage", "FIRMSIFT_SEARCH_PROVIDER: entry 2 ('homepage') repeats entry 1"),
    ("homepage,", "FIRMSIFT_SEARCH_PROVIDER: entry 2 is empty"),
])
def test_a_bad_chain_is_a_one_line_start_up_error_naming_the_entry(value: str, message: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(search_provider=value)
    assert startup_error_line(raised.value).startswith(f"invalid settings: {message}")


def test_each_provider_of_a_chain_needs_its_own_url_or_key() -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(search_provider="homepage,searxng,brave")
    line = startup_error_line(raised.value)
    assert "search_provider=homepage,searxng,brave needs FIRMSIFT_SEARXNG_URL and FIRMSIFT_BRAVE_API_KEY" in line
    with pytest.raises(ValidationError, match="needs FIRMSIFT_TAVILY_API_KEY to be set"):
        Settings(search_provider="tavily,homepage")
    Settings(search_provider="homepage,searxng", searxng_url="http://127.0.0.1:8888")
