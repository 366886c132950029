"""Search adapter for a SearXNG instance's JSON API."""

from __future__ import annotations

from typing import Any

import httpx

from firmsift.adapters.search.api import SearchApi, http_failure, json_at
from firmsift.adapters.search.html_evidence import bounded
from firmsift.adapters.web.retry_after import retry_after_seconds
from firmsift.domain.errors import ProviderError

FORMATS_HINT = "the instance refuses JSON: add json to search.formats in its settings.yml"
# SearXNG's limiter (searx/botdetection) answers 429 "Too Many Requests", without Retry-After, to
# requests that do not look like a browser's and to a fifth JSON search within an hour.
LIMITER_HINT = ("refused by the instance's limiter, which turns away API clients: set "
                "server.limiter: false in its settings.yml, or list firmsift's address under "
                "pass_ip in its limiter.toml")
ENGINES_NAMED = 8
ENGINE_CHARS = 60


class SearxngSearch(SearchApi):
    """Evidence from a (usually self-hosted) SearXNG: GET {base_url}/search?format=json.

    The instance must have the json format enabled in its settings (search.formats); it answers
    403 otherwise. An answer with no results whose engines failed (`unresponsive_engines`) is a
    failure naming them, not a search that found nothing."""

    name = "searxng"
    method = "GET"
    path = "/search"
    snippet_key = "content"

    def request(self, query: str) -> dict[str, Any]:
        return {"headers": {"Accept": "application/json"}, "params": {"q": query, "format": "json"}}

    def failure(self, status: int, headers: httpx.Headers, body: Any) -> ProviderError:
        if status == 403:
            return http_failure(self.name, status, headers, hint=FORMATS_HINT)
        if status == 429 and retry_after_seconds(headers) is None:
            # The limiter's windows are an hour long: waiting a few seconds would not help.
            return http_failure(self.name, status, headers, hint=LIMITER_HINT, retryable=False)
        return super().failure(status, headers, body)

    def results(self, body: Any) -> Any:
        results = json_at(self.name, body, "results")
        failed = failed_engines(body.get("unresponsive_engines"))
        if results == [] and failed:
            raise ProviderError(f"{self.name}: no results, and its engines failed: {failed}")
        return results


def failed_engines(unresponsive: Any) -> str:
    """SearXNG's `unresponsive_engines` ([[engine, why], ...]) as `engine (why), ...`: at most
    ENGINES_NAMED of them, each part cut short; entries of another shape are left out."""
    if not isinstance(unresponsive, list):
        return ""
    named = [f"{bounded(entry[0], ENGINE_CHARS)} ({bounded(entry[1], ENGINE_CHARS)})"
             for entry in unresponsive
             if isinstance(entry, list) and len(entry) == 2
             and all(isinstance(part, str) for part in entry)]
    more = len(named) - ENGINES_NAMED
    return ", ".join(named[:ENGINES_NAMED]) + (f" and {more} more" if more > 0 else "")
