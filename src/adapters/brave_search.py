"""Search adapter for the Brave Search web API."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from firmsift.adapters.search_http import (
    OwnedClient,
    evidence_from_results,
    json_at,
    request_json,
    search_query,
)
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence

# Brave accepts at most 20 results per query.
_BRAVE_MAX_COUNT = 20


class BraveSearch:
    """Evidence from Brave: GET {base_url}/res/v1/web/search with an X-Subscription-Token."""

    name = "brave"

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
        self._api_key = api_key
        self._url = base_url.rstrip("/") + "/res/v1/web/search"
        self._timeout = timeout
        self._max_results = min(max(1, max_results), _BRAVE_MAX_COUNT)
        self._client = OwnedClient(client)

    def __repr__(self) -> str:
        return f"BraveSearch(base_url={self._url.removesuffix('/res/v1/web/search')!r})"

    async def gather(self, domain: str) -> list[Evidence]:
        """Up to max_results web results about what the company at `domain` sells."""
        body = await request_json(
            self._client.get(),
            self.name,
            "GET",
            self._url,
            timeout=self._timeout,
            headers={"X-Subscription-Token": self._api_key, "Accept": "application/json"},
            params={"q": search_query(domain), "count": self._max_results},
        )
        if not isinstance(body, Mapping):
            raise ProviderError(f"{self.name}: search answered with an unexpected JSON shape")
        if "web" not in body:
            return []  # Brave leaves out the web section when nothing matched.
        results = json_at(self.name, body, "web", "results")
        return evidence_from_results(
            self.name, results, snippet_key="description", max_results=self._max_results
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        await self._client.aclose()
