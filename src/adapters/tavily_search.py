"""Search adapter for the Tavily search API."""

from __future__ import annotations

import httpx

from firmsift.adapters.search_http import (
    OwnedClient,
    evidence_from_results,
    json_at,
    request_json,
    search_query,
)
from firmsift.domain.model import Evidence

# Tavily accepts at most 20 results per query.
_TAVILY_MAX_RESULTS = 20


class TavilySearch:
    """Evidence from Tavily: POST {base_url}/search with a bearer API key."""

    name = "tavily"

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
        self._api_key = api_key
        self._url = base_url.rstrip("/") + "/search"
        self._timeout = timeout
        self._max_results = min(max(1, max_results), _TAVILY_MAX_RESULTS)
        self._client = OwnedClient(client)

    def __repr__(self) -> str:
        return f"TavilySearch(base_url={self._url.removesuffix('/search')!r})"

    async def gather(self, domain: str) -> list[Evidence]:
        """Up to max_results results about what the company at `domain` sells."""
        body = await request_json(
            self._client.get(),
            self.name,
            "POST",
            self._url,
            timeout=self._timeout,
            headers={"Authorization": f"Bearer {self._api_key}"},
            json={
                "query": search_query(domain),
                "max_results": self._max_results,
                "search_depth": "basic",
            },
        )
        results = json_at(self.name, body, "results")
        return evidence_from_results(
            self.name, results, snippet_key="content", max_results=self._max_results
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        await self._client.aclose()
