"""Search adapter for a SearXNG instance's JSON API."""

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


class SearxngSearch:
    """Evidence from a (usually self-hosted) SearXNG: GET {base_url}/search?format=json.

    The instance must have the json format enabled in its settings (search.formats)."""

    name = "searxng"

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 10.0,
        max_results: int = 5,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + "/search"
        self._timeout = timeout
        self._max_results = max(1, max_results)
        self._client = OwnedClient(client)

    async def gather(self, domain: str) -> list[Evidence]:
        """Up to max_results results about what the company at `domain` sells."""
        body = await request_json(
            self._client.get(),
            self.name,
            "GET",
            self._url,
            timeout=self._timeout,
            headers={"Accept": "application/json"},
            params={"q": search_query(domain), "format": "json"},
        )
        results = json_at(self.name, body, "results")
        return evidence_from_results(
            self.name, results, snippet_key="content", max_results=self._max_results
        )

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        await self._client.aclose()
