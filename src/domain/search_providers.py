"""The search providers firmsift knows, and how a chain of them is written: `homepage,searxng`.

The order is the order of asking (the next provider is asked when one fails or finds nothing
useful). A name is matched in any case, with spaces around it ignored; the list is kept as its
canonical spelling, lower case and comma-separated, which is also the chain's name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

SEARCH_PROVIDERS = ("homepage", "searxng", "tavily", "brave")
# What an entry must look like to be quoted back in an error: a value that is not even a name
# (a key pasted into the wrong variable) is never echoed.
_NAME_LIKE = re.compile(r"^[a-z0-9_-]{1,40}$")


class InvalidSearchProviders(ValueError):
    """A list of search providers that cannot be used; the message names the bad entry."""


def parse_search_providers(text: str) -> tuple[str, ...]:
    """The providers `text` names, in its order. Refuses an empty entry, an unknown name and a
    name given twice, saying which entry (1-based) is wrong."""
    names: list[str] = []
    known = ", ".join(SEARCH_PROVIDERS)
    for position, entry in enumerate(text.split(","), start=1):
        name = entry.strip().lower()
        if not name:
            raise InvalidSearchProviders(
                f"entry {position} is empty: give one or more of {known}, separated by commas")
        if name not in SEARCH_PROVIDERS:
            shown = f" ({name!r})" if _NAME_LIKE.match(name) else ""
            raise InvalidSearchProviders(f"entry {position}{shown} is not a search provider; known: {known}")
        if name in names:
            raise InvalidSearchProviders(
                f"entry {position} ({name!r}) repeats entry {names.index(name) + 1}: name each provider once")
        names.append(name)
    return tuple(names)


def chain_name(providers: Sequence[str]) -> str:
    """The canonical spelling of a chain: its providers' names joined by commas."""
    return ",".join(providers)
