"""Search adapter for the Tavily search API."""

from __future__ import annotations

from typing import Any

import httpx

from firmsift.adapters.search.api import SearchApi, http_failure
from firmsift.domain.errors import ProviderError

# Tavily's own statuses for a used-up allowance (help.tavily.com, "Understanding HTTP errors").
_LIMITS = {
    432: "the plan's usage limit is used up: upgrade the plan",
    433: "the pay-as-you-go limit is reached: raise it on the Tavily dashboard",
}


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

    def failure(self, status: int, headers: httpx.Headers, body: Any) -> ProviderError:
        if status in _LIMITS:
            return http_failure(self.name, status, headers, hint=_LIMITS[status])
        return super().failure(status, headers, body)
