"""Search adapter for a SearXNG instance's JSON API."""

from __future__ import annotations

from typing import Any

from firmsift.adapters.search.api import SearchApi


class SearxngSearch(SearchApi):
    """Evidence from a (usually self-hosted) SearXNG: GET {base_url}/search?format=json.

    The instance must have the json format enabled in its settings (search.formats)."""

    name = "searxng"
    method = "GET"
    path = "/search"
    snippet_key = "content"

    def request(self, query: str) -> dict[str, Any]:
        return {"headers": {"Accept": "application/json"}, "params": {"q": query, "format": "json"}}
