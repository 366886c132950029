"""HTTP plumbing shared by the search-API adapters: client ownership, errors, result bounds."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import httpx

from firmsift.adapters.bounded_body import ACCEPT_ENCODING, BodyLimits, UnreadableBody, read_body
from firmsift.adapters.html_evidence import bounded, text_from_fragment
from firmsift.adapters.retry_after import retry_after_seconds
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence

SNIPPET_CHARS = 500
TITLE_CHARS = 200
URL_CHARS = 2048
# Twenty results with their snippets are tens of kilobytes; anything near this is not a result list.
MAX_RESPONSE_BYTES = 2_000_000
_HINTS = {401: " (check the API key)", 403: " (check the API key)", 429: " (rate limited)"}


class OwnedClient:
    """An httpx.AsyncClient handed in by the caller (left open for the caller to close), or
    created on first use with `options` and closed by aclose(), so that nothing connects at
    import or construction time."""

    def __init__(self, client: httpx.AsyncClient | None, **options: Any) -> None:
        self._client = client
        self._owned = client is None
        self._options = options

    def get(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(**self._options)
        return self._client

    async def aclose(self) -> None:
        if self._owned and self._client is not None:
            await self._client.aclose()
            self._client = None


async def request_json(
    client: httpx.AsyncClient,
    provider: str,
    method: str,
    url: str,
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> Any:
    """Send one request and return its decoded JSON body.

    Every failure becomes a ProviderError naming the provider. Messages are built from the
    status code and the exception type only, never from headers or response bodies, which
    could carry (or echo) the API key. Timeouts, lost connections, 408, 429 and 5xx are marked
    retryable, with the Retry-After the provider sent; anything else would fail the same again.
    The body is streamed and inflated a piece at a time: more than MAX_RESPONSE_BYTES of it decoded,
    or a compression bomb, is a ProviderError before it can fill memory."""
    try:
        async with asyncio.timeout(timeout):
            async with client.stream(
                method,
                url,
                timeout=timeout,
                headers={"Accept-Encoding": ACCEPT_ENCODING, **(headers or {})},
                **kwargs,
            ) as response:
                _raise_for_status(provider, response)
                body = await read_body(response, BodyLimits(MAX_RESPONSE_BYTES), cut=False)
    except (httpx.TimeoutException, TimeoutError):
        raise ProviderError(f"{provider}: search timed out after {timeout:g}s", retryable=True) from None
    except httpx.HTTPError as exc:
        # A dropped or refused connection may work next time; a bad URL, protocol or redirect will not.
        retryable = isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError))
        raise ProviderError(
            f"{provider}: search request failed ({type(exc).__name__})", retryable=retryable
        ) from None
    except (httpx.InvalidURL, UnicodeError) as exc:
        # httpx parses a redirect's Location even when not following it; a hostile one raises here.
        raise ProviderError(f"{provider}: search request failed ({type(exc).__name__})") from None
    except UnreadableBody as exc:
        raise ProviderError(f"{provider}: search answered {exc}") from None
    try:
        return json.loads(body)
    except ValueError:
        raise ProviderError(f"{provider}: search answered with a body that is not JSON") from None


def _raise_for_status(provider: str, response: httpx.Response) -> None:
    if response.is_success:
        return
    status = response.status_code
    retryable = status in (408, 429) or status >= 500
    raise ProviderError(
        f"{provider}: search answered HTTP {status}{_HINTS.get(status, '')}",
        retryable=retryable,
        retry_after=retry_after_seconds(response.headers) if retryable else None,
    )


def evidence_from_results(
    provider: str, results: Any, *, snippet_key: str, max_results: int
) -> list[Evidence]:
    """Turn a provider's result list (dicts with url, title and `snippet_key`) into at most
    `max_results` bounded Evidence items. Items without an http(s) URL are skipped; a
    `results` that is not a list of objects is a ProviderError."""
    if not isinstance(results, list) or not all(isinstance(item, Mapping) for item in results):
        raise ProviderError(f"{provider}: search answered with an unexpected JSON shape")
    evidence: list[Evidence] = []
    for item in results:
        url = item.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        if len(url) > URL_CHARS:
            continue
        title, snippet = item.get("title"), item.get(snippet_key)
        evidence.append(
            Evidence(
                url=bounded(url, URL_CHARS),
                title=text_from_fragment(title if isinstance(title, str) else "", TITLE_CHARS),
                snippet=text_from_fragment(
                    snippet if isinstance(snippet, str) else "", SNIPPET_CHARS
                ),
            )
        )
        if len(evidence) >= max_results:
            break
    return evidence


def json_at(provider: str, body: Any, *path: str) -> Any:
    """body[path[0]][path[1]]...; a missing key or non-object on the way is a ProviderError."""
    for key in path:
        if not isinstance(body, Mapping) or key not in body:
            raise ProviderError(f"{provider}: search answered with an unexpected JSON shape")
        body = body[key]
    return body


def search_query(domain: str) -> str:
    """The query every search adapter sends: aimed at what the company sells."""
    return f'"{domain}" company products'
