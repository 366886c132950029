"""Search adapter for the Brave Search web API."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import httpx

from firmsift.adapters.search.api import SearchApi, error_code, http_failure, json_at
from firmsift.adapters.web.retry_after import retry_after_seconds
from firmsift.domain.errors import ProviderError

_KEY_CODES = {"SUBSCRIPTION_TOKEN_INVALID", "SUBSCRIPTION_TOKEN_MISSING", "SUBSCRIPTION_NOT_FOUND"}
_SECONDS = re.compile(r"[0-9]{1,10}")


class BraveSearch(SearchApi):
    """Evidence from Brave: GET {base_url}/res/v1/web/search with an X-Subscription-Token.

    Brave answers a key it does not accept with 422 SUBSCRIPTION_TOKEN_INVALID, and both of its
    limits with 429: RATE_LIMITED (the per-second window; its X-RateLimit-Reset says when it
    opens) or QUOTA_LIMITED (the plan's monthly quota, not worth retrying)."""

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

    def failure(self, status: int, headers: httpx.Headers, body: Any) -> ProviderError:
        code = error_code(body, "error", "code")
        if code in _KEY_CODES or (status in (401, 403) and code is not None):
            return http_failure(self.name, status, headers, hint=f"check the API key: {code}")
        if code == "QUOTA_LIMITED":
            return http_failure(self.name, status, headers, retryable=False,
                                hint=f"the plan's request quota is used up: {code}")
        if status == 429:
            waits = [wait for wait in (retry_after_seconds(headers), window_wait(headers))
                     if wait is not None]
            return http_failure(self.name, status, headers, hint=f"rate limited: {code or 'no code'}",
                                retry_after=max(waits, default=None))
        if code is not None:
            return http_failure(self.name, status, headers, hint=code)
        return super().failure(status, headers, body)

    def results(self, body: Any) -> Any:
        if not isinstance(body, Mapping):
            raise ProviderError(f"{self.name}: search answered with an unexpected JSON shape")
        if "web" not in body:
            return []  # Brave leaves out the web section when nothing matched.
        return json_at(self.name, body, "web", "results")


def window_wait(headers: Mapping[str, str]) -> float | None:
    """Seconds until Brave's rate limits let a request through, from its per-window headers
    (`X-RateLimit-Remaining: 0, 1543` and `X-RateLimit-Reset: 1, 1419704`, shortest window
    first): the longest reset among the windows with nothing left, or the first window's reset
    when none says so. None when the headers are missing or unreadable."""
    resets = _per_window(headers.get("x-ratelimit-reset", ""))
    if not resets:
        return None
    remaining = _per_window(headers.get("x-ratelimit-remaining", ""))
    lined_up = len(remaining) == len(resets)
    spent = [reset for reset, left in zip(resets, remaining) if left == 0] if lined_up else []
    return float(max(spent) if spent else resets[0])


def _per_window(value: str) -> list[int]:
    parts = [part.strip() for part in value.split(",")]
    return [int(part) for part in parts] if all(_SECONDS.fullmatch(part) for part in parts) else []
