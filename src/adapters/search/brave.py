"""Search adapter for the Brave Search web API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from firmsift.adapters.search.api import SearchApi, json_at
from firmsift.domain.errors import ProviderError


class BraveSearch(SearchApi):
    """Evidence from Brave: GET {base_url}/res/v1/web/search with an X-Subscription-Token."""

    name = "brave"
    method = "GET"
    path = "/res/v1/web/search"
    snippet_key = "description"
    most_results = 20  # Brave accepts at most 20 results per query.

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = "https://api.search.brave.com",
        timeout: float = 10.0,
        max_results: int = 5,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if not api_key:
            raise ValueError("brave: an API key is required")
        super().__init__(base_url, timeout=timeout, max_results=max_results, client=client)
        self._api_key = api_key

    def request(self, query: str) -> dict[str, Any]:
        return {
            "headers": {"X-Subscription-Token": self._api_key, "Accept": "application/json"},
            "params": {"q": query, "count": self._max_results},
        }

    def results(self, body: Any) -> Any:
        if not isinstance(body, Mapping):
            raise ProviderError(f"{self.name}: search answered with an unexpected JSON shape")
        if "web" not in body:
            return []  # Brave leaves out the web section when nothing matched.
        return json_at(self.name, body, "web", "results")
