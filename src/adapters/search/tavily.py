"""Search adapter for the Tavily search API."""

from __future__ import annotations

from typing import Any

import httpx

from firmsift.adapters.search.api import SearchApi


class TavilySearch(SearchApi):
    """Evidence from Tavily: POST {base_url}/search with a bearer API key."""

    name = "tavily"
    method = "POST"
    path = "/search"
    snippet_key = "content"
    most_results = 20  # Tavily accepts at most 20 results per query.

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = "https://api.tavily.com",
        timeout: float = 10.0,
        max_results: int = 5,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if not api_key:
            raise ValueError("tavily: an API key is required")
        super().__init__(base_url, timeout=timeout, max_results=max_results, client=client)
        self._api_key = api_key

    def request(self, query: str) -> dict[str, Any]:
        return {
            "headers": {"Authorization": f"Bearer {self._api_key}"},
            "json": {"query": query, "max_results": self._max_results, "search_depth": "basic"},
        }
